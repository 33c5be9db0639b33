import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/** A webhook routine may debounce its calls: `{seconds, key?, max_wait_s?}` as JSON (null: every call starts an execution). */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('routines').addColumn('debounce', 'text').execute();
}
