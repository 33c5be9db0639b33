import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * People: `users` (scrypt password hashes, never returned), API keys bound to a
 * user (`api_keys.user_id`), the console's `auth_sessions` (only a hash of the session token),
 * and `sign_in_failures` (wrong passwords per username and client address, for throttling
 * shared by every node). Existing keys stay bound to no user.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('username', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text')
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text')
    .addColumn('disabled_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema.alterTable('api_keys').addColumn('user_id', 'text').execute();
  // Disabling or deleting a user finds its keys.
  await db.schema.createIndex('api_keys_user').on('api_keys').column('user_id').execute();

  await db.schema
    .createTable('auth_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text')
    .addColumn('key_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('auth_sessions_user').on('auth_sessions').column('user_id').execute();
  await db.schema.createIndex('auth_sessions_key').on('auth_sessions').column('key_id').execute();
  await db.schema.createIndex('auth_sessions_expiry').on('auth_sessions').column('expires_at').execute();

  await db.schema
    .createTable('sign_in_failures')
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('failed_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sign_in_failures_bucket').on('sign_in_failures').columns(['bucket', 'failed_at']).execute();
  await db.schema.createIndex('sign_in_failures_at').on('sign_in_failures').column('failed_at').execute();
}
