import { Store } from '../db/store.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { MessageRow, SessionRow, ThreadRow } from './store.js';

/** The SQL of sessions and threads (threads.ts): a thread's messages, and its turn in turn mode. */
export class ThreadsStore extends Store {
  async threadMessages(tx: Tx, threadId: string, window: Page): Promise<Paged<MessageRow>> {
    const query = dbOf(tx, this.db).selectFrom('messages').selectAll().where('thread_id', '=', threadId).orderBy('seq');
    return this.paginate(tx, query, window);
  }

  async insertSession(tx: Tx, row: SessionRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('messaging_sessions').values(row).execute();
  }

  async findSession(tx: Tx, id: string): Promise<SessionRow | undefined> {
    return dbOf(tx, this.db).selectFrom('messaging_sessions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async listSessions(tx: Tx, window: Page): Promise<Paged<SessionRow>> {
    return this.paginate(tx, dbOf(tx, this.db).selectFrom('messaging_sessions').selectAll().orderBy('id'), window);
  }

  async insertThread(tx: Tx, row: ThreadRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('messaging_threads').values(row).execute();
  }

  async findThread(tx: Tx, id: string): Promise<ThreadRow | undefined> {
    return dbOf(tx, this.db).selectFrom('messaging_threads').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Advances a turn-mode thread from `turn`; false when another sender took the turn first. */
  async advanceTurn(tx: Tx, id: string, turn: number): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .updateTable('messaging_threads')
      .set({ turn: turn + 1 })
      .where('id', '=', id)
      .where('turn', '=', turn)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
}
