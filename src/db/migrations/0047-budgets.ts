import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/** Budgets over usage: a scope, a period, limits, and the current period's consumption and pause. */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('budgets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('scope_kind', 'text', (c) => c.notNull())
    .addColumn('scope_value', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('time_zone', 'text', (c) => c.notNull())
    .addColumn('limit_cost_usd', 'double precision')
    .addColumn('limit_tokens', 'bigint')
    .addColumn('warn_at', 'double precision')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('period_start', 'bigint', (c) => c.notNull())
    .addColumn('spent_cost_usd', 'double precision', (c) => c.notNull())
    .addColumn('spent_tokens', 'bigint', (c) => c.notNull())
    .addColumn('warned', 'integer', (c) => c.notNull())
    .addColumn('exceeded', 'integer', (c) => c.notNull())
    .addColumn('paused_until', 'bigint')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('budgets_scope').on('budgets').columns(['scope_kind', 'scope_value']).execute();
}
