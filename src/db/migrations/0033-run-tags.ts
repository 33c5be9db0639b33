import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Tags a run is started with (`tags` of the run start), a row each: the runs list finds the runs
 * of a tag through the (tag, run_id) key instead of reading every run's list.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('run_tags')
    .addColumn('tag', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_tags_pk', ['tag', 'run_id'])
    .execute();
  await db.schema.createIndex('run_tags_run').on('run_tags').columns(['run_id']).execute();
}
