import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The records' run and plan indexes hold only the records that have a run or a plan: their
 * readers ask for one run or one plan (`run_id = ?`, `plan_id = ?`, which only such a record
 * matches), and an acknowledgement outside any run no longer writes an entry to each.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await db.schema.dropIndex('usage_records_run').execute();
  await db.schema
    .createIndex('usage_records_run')
    .on('usage_records')
    .columns(['run_id', 'step_id'])
    .where('run_id', 'is not', null)
    .execute();
  await db.schema.dropIndex('usage_records_plan').execute();
  // As in 0068: the columns totals by run sum ride along, so that the read is one range of the index.
  const summed = 'run_id, input_tokens, output_tokens, cached_tokens, cost_usd';
  await sql
    .raw(
      caps.kind === 'postgres'
        ? `CREATE INDEX usage_records_plan ON usage_records (plan_id, recorded_at) INCLUDE (${summed}) WHERE plan_id IS NOT NULL`
        : `CREATE INDEX usage_records_plan ON usage_records (plan_id, recorded_at, ${summed}) WHERE plan_id IS NOT NULL`,
    )
    .execute(db);
}
