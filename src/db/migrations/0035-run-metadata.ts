import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The metadata a run is started with (`metadata` of the run start: string values by key), a row
 * each: the runs list finds the runs of a key and value through the (key, value) index instead
 * of reading every run's input.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('run_metadata')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_metadata_pk', ['run_id', 'key'])
    .execute();
  await db.schema.createIndex('run_metadata_key_value').on('run_metadata').columns(['key', 'value']).execute();
}
