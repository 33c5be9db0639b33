import type { Tx } from '../kernel/tx.js';
import { atomically } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { MessageState } from './tables.js';

/** The column that says when a message in a finished state ended. */
export type EndColumn = 'acked_at' | 'delivered_at' | 'dead_at' | 'created_at';

/** Retention of messages (the SQL that deletes finished messages with their delivery attempts). */
export class MessageRetentionStore extends Store {
  /**
   * Deletes up to `limit` messages in `state` that ended (`ended`) before `before`, oldest sent
   * first, with their delivery attempts; answers the messages' ids and how many attempts. A message ends after it is
   * sent, so the range on (state, created_at) holds every one of them.
   */
  async deleteEnded(
    tx: Tx,
    state: MessageState,
    ended: EndColumn,
    before: number,
    limit: number,
  ): Promise<{ messages: string[]; attempts: number }> {
    return atomically(tx, this.db, async (trx) => {
      const ids = (
        await trx
          .selectFrom('messages')
          .select('id')
          .where('state', '=', state)
          .where('created_at', '<', before)
          .where(ended, '<', before)
          .orderBy('created_at')
          .limit(limit)
          .execute()
      ).map((row) => row.id);
      if (ids.length === 0) return { messages: [], attempts: 0 };
      // The state again: a message that changed since the select (a dead letter redriven) stays.
      const gone = (
        await trx.deleteFrom('messages').where(this.caps.inTextList('id', ids)).where('state', '=', state).returning('id').execute()
      ).map((row) => row.id);
      if (gone.length === 0) return { messages: [], attempts: 0 };
      const attempts = await trx.deleteFrom('message_deliveries').where(this.caps.inTextList('message_id', gone)).executeTakeFirst();
      return { messages: gone, attempts: Number(attempts.numDeletedRows) };
    });
  }
}
