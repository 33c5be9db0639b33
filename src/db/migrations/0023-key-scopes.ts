import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Narrower, expiring keys: `scopes` (a JSON array of permission names; null: the whole role),
 * `expires_at` (null: never) and `last_used_at` (written at most once a minute per key and node).
 * Existing keys keep their role and get neither scopes nor expiry.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('scopes', 'text').execute();
  await db.schema.alterTable('api_keys').addColumn('expires_at', 'bigint').execute();
  await db.schema.alterTable('api_keys').addColumn('last_used_at', 'bigint').execute();
}
