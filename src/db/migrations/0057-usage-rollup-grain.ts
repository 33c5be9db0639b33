import { sql, type Kysely } from 'kysely';

/**
 * The rollup loses its run column (a row per run per hour made it as large as the records, so
 * totals read as much as a scan; totals by run read the records on their plan's index instead),
 * and is rebuilt from the records. Rows of days past are later merged into one row per day.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('usage_hourly').execute();
  await db.schema
    .createTable('usage_hourly')
    .addColumn('hour', 'bigint', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('capability', 'text', (c) => c.notNull())
    .addColumn('plan_id', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addColumn('input_tokens', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('cached_tokens', 'bigint', (c) => c.notNull())
    .addColumn('cost_usd', 'double precision', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_hourly_pk', ['hour', 'agent_id', 'model', 'capability', 'plan_id'])
    .execute();
  await sql`INSERT INTO usage_hourly (hour, agent_id, model, capability, plan_id, count, input_tokens, output_tokens, cached_tokens, cost_usd)
    SELECT recorded_at - (recorded_at % 3600000), agent_id, model, COALESCE(capability, ''), COALESCE(plan_id, ''),
      count(*), sum(input_tokens), sum(output_tokens), sum(cached_tokens), sum(cost_usd)
    FROM usage_records GROUP BY 1, 2, 3, 4, 5`.execute(db);
  await db.schema.createIndex('usage_hourly_agent').on('usage_hourly').columns(['agent_id', 'hour']).execute();
  await db.schema.createIndex('usage_hourly_plan').on('usage_hourly').columns(['plan_id', 'hour']).execute();
  await db.schema.createIndex('usage_records_plan').on('usage_records').columns(['plan_id', 'recorded_at']).execute();
}
