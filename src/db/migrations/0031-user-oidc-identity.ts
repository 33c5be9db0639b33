import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Users who sign in through OIDC: the identity provider's issuer and the user's
 * `sub` there, which find the user again at the next sign-in (a username may be renamed at the
 * provider, a `sub` is stable). Unique together; null for users without OIDC sign-in.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('users').addColumn('oidc_issuer', 'text').execute();
  await db.schema.alterTable('users').addColumn('oidc_subject', 'text').execute();
  await db.schema.createIndex('users_oidc_identity').on('users').columns(['oidc_issuer', 'oidc_subject']).unique().execute();
}
