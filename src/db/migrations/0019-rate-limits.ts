import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The cluster-wide request budgets (cluster/rate-limiter.ts): per budget and window,
 * the requests nodes have leased so far. Rows of past windows are deleted. Unused on SQLite.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('rate_limit_windows')
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('leased', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_limit_windows_pk', ['bucket', 'window_start'])
    .execute();
  await db.schema.createIndex('rate_limit_windows_start').on('rate_limit_windows').column('window_start').execute();
}
