import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The node registry: one row per running server on this database,
 * inserted at start, touched by its heartbeat every 5 s, marked stopped by a clean shutdown;
 * rows of nodes silent for a day are swept. On SQLite there is one node.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('cluster_nodes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('stopped_at', 'bigint')
    .execute();
  await db.schema.createIndex('cluster_nodes_last_seen').on('cluster_nodes').column('last_seen_at').execute();
}
