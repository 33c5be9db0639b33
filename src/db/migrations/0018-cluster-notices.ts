import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Notifications as rows, for SWITCHBOARD_PG_LISTEN=off (PgBouncer in transaction mode breaks
 * LISTEN): db/polling-notifier.ts inserts each notice and every node reads the last seconds'
 * rows every 250 ms. Rows older than a minute are deleted. Unused on SQLite and with LISTEN.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await caps
    .serialPrimaryKey(db.schema.createTable('cluster_notices'), 'seq')
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('cluster_notices_created_at').on('cluster_notices').column('created_at').execute();
}
