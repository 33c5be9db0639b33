import type { Selectable } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { paginateCompiled } from '../db/paginate.js';
import { Statements } from '../db/statements.js';
import { dbOf, type Tx } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { ApiKeysTable, AgentPublicKeysTable } from './tables.js';

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type PublicKeyRow = Selectable<AgentPublicKeysTable>;

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
  async listKeys(tx: Tx, window: Page, options: { includeRevoked: boolean }): Promise<Paged<ApiKeyRow>> {
    const { includeRevoked } = options;
    const db = dbOf(tx, this.db);
    return paginateCompiled(db, this.statements, `keys:${includeRevoked}`, {}, () => {
      const query = db.selectFrom('api_keys').selectAll().orderBy('id');
      return includeRevoked ? query : query.where('revoked_at', 'is', null);
    }, window);
  }

  async revokedAmong(tx: Tx, ids: string[]): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('api_keys')
      .select('id')
      .where(this.caps.inTextList('id', ids))
      .where('revoked_at', 'is not', null)
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
    const rows = await dbOf(tx, this.db).deleteFrom('agent_public_keys').where('registered_by_key_id', '=', keyId).returning('id').execute();
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

  async forgetSignaturesBefore(tx: Tx, at: number): Promise<number> {
    const result = await dbOf(tx, this.db).deleteFrom('signature_nonces').where('expires_at', '<', at).executeTakeFirst();
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
}
