import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * A run's output over the inline payload limit is an artifact, named here as JSON
 * `{artifact_id, version, size_bytes, sha256}` (runs.output is then null), as a step's is.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('runs').addColumn('output_ref', 'text').execute();
}
