import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/** Usage records (tokens and cost an agent reports) and their hourly rollup, which totals read. */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('usage_records')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('provider', 'text')
    .addColumn('input_tokens', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('cached_tokens', 'bigint', (c) => c.notNull())
    .addColumn('cost_usd', 'double precision', (c) => c.notNull())
    .addColumn('message_id', 'text')
    .addColumn('run_id', 'text')
    .addColumn('step_id', 'text')
    .addColumn('plan_id', 'text')
    .addColumn('capability', 'text')
    .addColumn('recorded_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('usage_records_run').on('usage_records').columns(['run_id', 'step_id']).execute();
  await db.schema
    .createTable('usage_hourly')
    .addColumn('hour', 'bigint', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('capability', 'text', (c) => c.notNull())
    .addColumn('plan_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addColumn('input_tokens', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('cached_tokens', 'bigint', (c) => c.notNull())
    .addColumn('cost_usd', 'double precision', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_hourly_pk', ['hour', 'agent_id', 'model', 'capability', 'plan_id', 'run_id'])
    .execute();
  await db.schema.createIndex('usage_hourly_agent').on('usage_hourly').columns(['agent_id', 'hour']).execute();
  await db.schema.createIndex('usage_hourly_plan').on('usage_hourly').columns(['plan_id', 'hour']).execute();
}
