import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Fewer index entries per cron fire (10,000 routines can fall due in one second).
 * - messages_thread held an entry for every message, thread or not; only thread messages are
 *   ever looked up through it (`thread_id = ?`, which implies the partial index's predicate on
 *   both dialects), so routine and plan messages now skip it.
 * - PostgreSQL writes a new entry in every index of a row whose indexed column changes (no HOT
 *   update): advancing next_run_at also wrote a NULL webhook token entry for each cron routine.
 *   The token's uniqueness now lives in a partial index. SQLite updates only the indexes whose
 *   columns change (and cannot drop a column constraint's index), so it keeps its own.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await db.schema.dropIndex('messages_thread').execute();
  await db.schema.createIndex('messages_thread').on('messages').columns(['thread_id', 'seq']).where('thread_id', 'is not', null).execute();
  if (caps.kind === 'postgres') {
    await db.schema.alterTable('routines').dropConstraint('routines_webhook_token_hash_key').execute();
    await db.schema
      .createIndex('routines_webhook_token')
      .on('routines')
      .column('webhook_token_hash')
      .unique()
      .where('webhook_token_hash', 'is not', null)
      .execute();
  }
}
