import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { A2aTaskState, A2aTasksTable } from './tables.js';

export type A2aTaskRow = A2aTasksTable;

/** The states a task never leaves. */
export const FINAL_STATES: readonly A2aTaskState[] = ['completed', 'failed', 'canceled'];

/** The only SQL of A2A: tasks and the inbox message each one is. */
export class A2aStore extends Store {
  async insertTask(tx: Tx, row: A2aTaskRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('a2a_tasks').values(row).execute();
  }

  async findTask(tx: Tx, id: string): Promise<A2aTaskRow | undefined> {
    return dbOf(tx, this.db).selectFrom('a2a_tasks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Moves tasks still in one of `from` to `to`; a task already past them is left as it is (a
   * late delivery never reopens a settled task). Returns the ids moved.
   */
  async moveTasks(
    tx: Tx,
    ids: string[],
    from: readonly A2aTaskState[],
    to: { state: A2aTaskState; output?: string | null; reason?: string | null; updated_at: number },
  ): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await dbOf(tx, this.db)
      .updateTable('a2a_tasks')
      .set(to)
      .where('id', 'in', ids)
      .where('state', 'in', [...from])
      .returning('id')
      .execute();
    return rows.map((row) => row.id);
  }
}
