import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Which agent API key registered each public key: revoking that key deletes the public keys it
 * registered in the same transaction, so that a signing key no longer outlives the key that
 * vouched for it. Null: registered by an admin (kept until deleted), or before this column
 * existed (unknown, also kept: README says how to find and delete them).
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('agent_public_keys').addColumn('registered_by_key_id', 'text').execute();
  await db.schema.createIndex('agent_public_keys_registered_by').on('agent_public_keys').column('registered_by_key_id').execute();
}
