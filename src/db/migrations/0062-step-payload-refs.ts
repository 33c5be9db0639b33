import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Large step inputs and outputs by reference: a step's output (and input) over the inline
 * payload limit is an artifact, named here as JSON `{artifact_id, version, size_bytes, sha256}`.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('run_steps').addColumn('output_ref', 'text').execute();
  await db.schema.alterTable('run_steps').addColumn('input_ref', 'text').execute();
}
