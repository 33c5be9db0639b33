import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * A run started as a rerun of another (from one of its steps, the earlier steps' outputs reused)
 * names that run: a redrive of the earlier run's step letters is refused once it was rerun.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('runs').addColumn('rerun_of', 'text').execute();
  await db.schema.createIndex('runs_rerun_of').on('runs').column('rerun_of').execute();
}
