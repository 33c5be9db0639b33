import type { Selectable } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { paginateCompiled } from '../db/paginate.js';
import { Statements } from '../db/statements.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { ApiKeysTable, AgentPublicKeysTable, AuthSessionsTable, UsersTable } from './tables.js';

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type PublicKeyRow = Selectable<AgentPublicKeysTable>;
export type UserRow = Selectable<UsersTable>;
export type SessionRow = Selectable<AuthSessionsTable>;

/** A user's credentials that end with it: its API keys and its sessions. */
export interface UserCredentials {
  keyIds: string[];
  sessionIds: string[];
}

export class AuthStore extends Store {
  private readonly statements: Statements;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.statements = new Statements(db);
  }

  /**
   * Holds the bootstrap lock until `tx` ends: nodes that start together on one database take
   * turns, so only the first finds no admin key.
   */
  async lockBootstrap(tx: Tx): Promise<void> {
    await this.caps.transactionLock(dbOf(tx, this.db), 'auth:bootstrap');
  }

  async hasActiveAdminKey(tx: Tx): Promise<boolean> {
    const row = await dbOf(tx, this.db)
      .selectFrom('api_keys')
      .select('id')
      .where('role', '=', 'admin')
      .where('revoked_at', 'is', null)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async insertKey(tx: Tx, row: ApiKeyRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('api_keys').values(row).execute();
  }

  async findKeyByHash(tx: Tx, keyHash: string): Promise<ApiKeyRow | undefined> {
    return dbOf(tx, this.db).selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
  }

  async findKey(tx: Tx, id: string): Promise<ApiKeyRow | undefined> {
    return dbOf(tx, this.db).selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Compiled once per shape (see Statements): every key listing would otherwise build it anew. */
  async listKeys(tx: Tx, window: Page, options: { includeRevoked: boolean; userId: string | null }): Promise<Paged<ApiKeyRow>> {
    const { includeRevoked, userId } = options;
    const db = dbOf(tx, this.db);
    const values = userId === null ? {} : { userId };
    return paginateCompiled(
      db,
      this.statements,
      `keys:${includeRevoked}:${userId !== null}`,
      values,
      (v: { userId?: string }) => {
        const query = db.selectFrom('api_keys').selectAll().orderBy('id');
        const owned = v.userId === undefined ? query : query.where('user_id', '=', v.userId);
        return includeRevoked ? owned : owned.where('revoked_at', 'is', null);
      },
      window,
    );
  }

  /** Those of the given API keys that are revoked, or whose user is disabled or gone. */
  async endedKeysAmong(tx: Tx, ids: string[]): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('api_keys')
      .leftJoin('users', 'users.id', 'api_keys.user_id')
      .select('api_keys.id')
      .where(this.caps.inTextList('api_keys.id', ids))
      .where((eb) =>
        eb.or([
          eb('api_keys.revoked_at', 'is not', null),
          eb.and([eb('api_keys.user_id', 'is not', null), eb.or([eb('users.id', 'is', null), eb('users.disabled_at', 'is not', null)])]),
        ]),
      )
      .execute();
    return rows.map((row) => row.id);
  }

  /** Those of the given sessions that still exist and have not expired. */
  async liveSessionsAmong(tx: Tx, ids: string[], now: number): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('auth_sessions')
      .select('id')
      .where(this.caps.inTextList('id', ids))
      .where('expires_at', '>', now)
      .execute();
    return rows.map((row) => row.id);
  }

  async touchKey(tx: Tx, id: string, at: number): Promise<void> {
    await dbOf(tx, this.db).updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
  }

  /** Revokes the key; false when it was revoked already. */
  async revokeKey(tx: Tx, id: string, at: number): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * The key, locked until `tx` ends (PostgreSQL): a public key registered under it commits
   * either before its revocation (which then deletes it) or after, seeing it revoked.
   */
  async lockKey(tx: Tx, id: string): Promise<ApiKeyRow | undefined> {
    return this.caps.lock(dbOf(tx, this.db).selectFrom('api_keys').selectAll().where('id', '=', id)).executeTakeFirst();
  }

  /** Revokes every unrevoked key with this name except the one given (bootstrap key rotation). */
  async revokeOtherKeysNamed(tx: Tx, name: string, keepId: string, at: number): Promise<void> {
    await dbOf(tx, this.db)
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('name', '=', name)
      .where('id', '!=', keepId)
      .where('revoked_at', 'is', null)
      .execute();
  }

  async insertPublicKey(tx: Tx, row: PublicKeyRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('agent_public_keys').values(row).execute();
  }

  async listPublicKeys(tx: Tx, agentId: string): Promise<PublicKeyRow[]> {
    return dbOf(tx, this.db).selectFrom('agent_public_keys').selectAll().where('agent_id', '=', agentId).orderBy('id').execute();
  }

  async deletePublicKey(tx: Tx, agentId: string, id: string): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .deleteFrom('agent_public_keys')
      .where('agent_id', '=', agentId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Deletes the public keys the given API key registered; returns their ids. */
  async deletePublicKeysRegisteredBy(tx: Tx, keyId: string): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .deleteFrom('agent_public_keys')
      .where('registered_by_key_id', '=', keyId)
      .returning('id')
      .execute();
    return rows.map((row) => row.id).sort();
  }

  /** Records a signature as used; false when it was already used (a replay). */
  async rememberSignature(tx: Tx, signatureHash: string, expiresAt: number): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .insertInto('signature_nonces')
      .values({ signature_hash: signatureHash, expires_at: expiresAt })
      .onConflict((oc) => oc.column('signature_hash').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** Deletes up to `limit` remembered signatures whose replay window ended before `at`. */
  async forgetSignaturesBefore(tx: Tx, at: number, limit: number): Promise<number> {
    const db = dbOf(tx, this.db);
    const old = db.selectFrom('signature_nonces').select('signature_hash').where('expires_at', '<', at).orderBy('expires_at').limit(limit);
    const result = await db.deleteFrom('signature_nonces').where('signature_hash', 'in', old).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async getSetting(tx: Tx, name: string): Promise<string | undefined> {
    const row = await dbOf(tx, this.db).selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst();
    return row?.value;
  }

  /** Stores a setting unless one exists; returns the value that is stored now (first writer wins). */
  async ensureSetting(tx: Tx, name: string, value: string, at: number): Promise<string> {
    await dbOf(tx, this.db)
      .insertInto('settings')
      .values({ name, value, updated_at: at })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    return (await this.getSetting(tx, name)) ?? value;
  }

  async insertUser(tx: Tx, row: UserRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('users').values(row).execute();
  }

  async findUser(tx: Tx, id: string): Promise<UserRow | undefined> {
    return dbOf(tx, this.db).selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findUserByOidc(tx: Tx, issuer: string, subject: string): Promise<UserRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('users')
      .selectAll()
      .where('oidc_issuer', '=', issuer)
      .where('oidc_subject', '=', subject)
      .executeTakeFirst();
  }

  async findUserByName(tx: Tx, username: string): Promise<UserRow | undefined> {
    return dbOf(tx, this.db).selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst();
  }

  async listUsers(tx: Tx, window: Page): Promise<Paged<UserRow>> {
    return this.paginate(tx, dbOf(tx, this.db).selectFrom('users').selectAll().orderBy('id'), window);
  }

  /** Changes the given columns; the row after the change, or undefined when there is no such user. */
  async updateUser(tx: Tx, id: string, changes: Partial<Omit<UserRow, 'id' | 'username' | 'created_at'>>): Promise<UserRow | undefined> {
    return dbOf(tx, this.db).updateTable('users').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
  }

  async deleteUser(tx: Tx, id: string): Promise<boolean> {
    const result = await dbOf(tx, this.db).deleteFrom('users').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** The user's unrevoked keys and its sessions; `withKeys: false` only its sessions. */
  async credentialsOfUser(tx: Tx, userId: string, withKeys: boolean): Promise<UserCredentials> {
    const db = dbOf(tx, this.db);
    const keys = withKeys
      ? await db.selectFrom('api_keys').select('id').where('user_id', '=', userId).where('revoked_at', 'is', null).execute()
      : [];
    const sessions = await db.selectFrom('auth_sessions').select('id').where('user_id', '=', userId).execute();
    return { keyIds: keys.map((row) => row.id), sessionIds: sessions.map((row) => row.id) };
  }

  /** Revokes every unrevoked key of the user (it is deleted). */
  async revokeKeysOfUser(tx: Tx, userId: string, at: number): Promise<void> {
    await dbOf(tx, this.db)
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .execute();
  }

  async insertSession(tx: Tx, row: SessionRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('auth_sessions').values(row).execute();
  }

  async findSessionByHash(tx: Tx, tokenHash: string): Promise<SessionRow | undefined> {
    return dbOf(tx, this.db).selectFrom('auth_sessions').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  }

  /** Moves a session's expiry forward (never back: another node may have moved it further). */
  async extendSession(tx: Tx, id: string, expiresAt: number): Promise<void> {
    await dbOf(tx, this.db)
      .updateTable('auth_sessions')
      .set({ expires_at: expiresAt })
      .where('id', '=', id)
      .where('expires_at', '<', expiresAt)
      .execute();
  }

  async deleteSession(tx: Tx, id: string): Promise<boolean> {
    const result = await dbOf(tx, this.db).deleteFrom('auth_sessions').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Deletes the sessions of the given users or keys; returns their ids. */
  async deleteSessionsOf(tx: Tx, of: { userId: string } | { keyId: string }): Promise<string[]> {
    const query = dbOf(tx, this.db).deleteFrom('auth_sessions');
    const scoped = 'userId' in of ? query.where('user_id', '=', of.userId) : query.where('key_id', '=', of.keyId);
    return (await scoped.returning('id').execute()).map((row) => row.id);
  }

  /** Deletes up to `limit` sessions expired by `at`. */
  async deleteSessionsExpiredBy(tx: Tx, at: number, limit: number): Promise<number> {
    const db = dbOf(tx, this.db);
    const old = db.selectFrom('auth_sessions').select('id').where('expires_at', '<=', at).orderBy('expires_at').limit(limit);
    const result = await db.deleteFrom('auth_sessions').where('id', 'in', old).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** The bucket's failures since `since`: how many, and the oldest. */
  async signInFailures(tx: Tx, bucket: string, since: number): Promise<{ count: number; oldest: number | null }> {
    const row = await dbOf(tx, this.db)
      .selectFrom('sign_in_failures')
      .select((eb) => [eb.fn.countAll<string | number>().as('count'), eb.fn.min('failed_at').as('oldest')])
      .where('bucket', '=', bucket)
      .where('failed_at', '>', since)
      .executeTakeFirstOrThrow();
    return { count: Number(row.count), oldest: row.oldest === null ? null : Number(row.oldest) };
  }

  async recordSignInFailure(tx: Tx, bucket: string, at: number): Promise<void> {
    await dbOf(tx, this.db).insertInto('sign_in_failures').values({ bucket, failed_at: at }).execute();
  }

  async clearSignInFailures(tx: Tx, bucket: string): Promise<void> {
    await dbOf(tx, this.db).deleteFrom('sign_in_failures').where('bucket', '=', bucket).execute();
  }

  async forgetSignInFailuresBefore(tx: Tx, at: number): Promise<number> {
    const result = await dbOf(tx, this.db).deleteFrom('sign_in_failures').where('failed_at', '<=', at).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
