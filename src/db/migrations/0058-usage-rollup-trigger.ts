import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The hourly rollup kept by a trigger on usage_records, in the insert's transaction, instead of
 * an upsert the server sends after each insert: one statement per acknowledgement that carries
 * usage, not two. PostgreSQL: a statement trigger over the inserted rows, summed per key first
 * (a multi-row upsert may not touch one row twice), in key order (two transactions lock rows in
 * the same order).
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  const sums = `count, input_tokens, output_tokens, cached_tokens, cost_usd`;
  // SQLite refuses the table's alias in a trigger's upsert when it re-reads the schema (an ALTER TABLE): columns unqualified there.
  const add = (table: string) =>
    ['count', 'input_tokens', 'output_tokens', 'cached_tokens', 'cost_usd'].map((c) => `${c} = ${table}${c} + excluded.${c}`).join(', ');
  if (caps.kind === 'postgres') {
    await sql
      .raw(
        `create function usage_records_roll_up() returns trigger language plpgsql as $$ begin
        insert into usage_hourly as h (hour, agent_id, model, capability, plan_id, ${sums})
        select recorded_at - (recorded_at % 3600000), agent_id, model, coalesce(capability, ''), coalesce(plan_id, ''),
          count(*), sum(input_tokens), sum(output_tokens), sum(cached_tokens), sum(cost_usd)
        from added group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
        on conflict (hour, agent_id, model, capability, plan_id) do update set ${add('h.')};
        return null; end $$`,
      )
      .execute(db);
    await sql
      .raw(
        `create trigger usage_records_roll_up after insert on usage_records referencing new table as added
        for each statement execute function usage_records_roll_up()`,
      )
      .execute(db);
    return;
  }
  await sql
    .raw(
      `create trigger usage_records_roll_up after insert on usage_records begin
      insert into usage_hourly (hour, agent_id, model, capability, plan_id, ${sums})
      values (new.recorded_at - (new.recorded_at % 3600000), new.agent_id, new.model, coalesce(new.capability, ''), coalesce(new.plan_id, ''),
        1, new.input_tokens, new.output_tokens, new.cached_tokens, new.cost_usd)
      on conflict (hour, agent_id, model, capability, plan_id) do update set ${add('')}; end`,
    )
    .execute(db);
}
