import type { Selectable } from 'kysely';
import { nextDue } from '../db/capabilities.js';
import { dbOf } from '../db/tx.js';
import type { Tx } from '../kernel/tx.js';
import { CoordinationStore } from './coordination-store.js';
import type { ApprovalTimersTable } from './tables.js';

export type ApprovalTimerRow = Selectable<ApprovalTimersTable>;

/** Human steps' reminders and escalations (the only SQL of approval_timers). */
export class ApprovalTimerStore extends CoordinationStore {
  async insert(tx: Tx, rows: ApprovalTimerRow[]): Promise<void> {
    if (rows.length > 0) await dbOf(tx, this.db).insertInto('approval_timers').values(rows).execute();
  }

  /** The timers due at `now`, earliest first. */
  async due(tx: Tx, now: number, limit: number): Promise<ApprovalTimerRow[]> {
    return dbOf(tx, this.db)
      .selectFrom('approval_timers')
      .selectAll()
      .where('due_at', '<=', now)
      .orderBy('due_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  }

  async nextDueAt(tx: Tx): Promise<number | null> {
    return nextDue(
      await dbOf(tx, this.db)
        .selectFrom('approval_timers')
        .select((eb) => eb.fn.min('due_at').as('next'))
        .executeTakeFirst(),
    );
  }

  /**
   * Takes the timer: true for the one transaction that deletes it (another node's delete of the
   * same row waits for this one's commit, then deletes nothing).
   */
  async claim(tx: Tx, id: string): Promise<boolean> {
    const result = await dbOf(tx, this.db).deleteFrom('approval_timers').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /** Drops a step's timers (it was decided: nothing is left to remind of). */
  async dropStep(tx: Tx, runId: string, stepId: string): Promise<void> {
    await dbOf(tx, this.db).deleteFrom('approval_timers').where('run_id', '=', runId).where('step_id', '=', stepId).execute();
  }
}
