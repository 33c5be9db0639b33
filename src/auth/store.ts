import type { Selectable } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { paginateCompiled } from '../db/paginate.js';
import { Statements } from '../db/statements.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { ApiKeysTable, AgentPublicKeysTable } from './tables.js';

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type PublicKeyRow = Selectable<AgentPublicKeysTable>;

export class AuthStore {
  private readonly statements: Statements;

  constructor(
    private readonly db: Db,
    private readonly caps: DialectCapabilities,
  ) {
    this.statements = new Statements(db);
  }

  /**
   * Runs `work` with a store inside one transaction that holds the bootstrap lock: nodes that
   * start together on one database take turns, so only the first finds no admin key.
   */
  async withBootstrapLock<T>(work: (store: AuthStore) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      await this.caps.transactionLock(trx, 'auth:bootstrap');
      return work(new AuthStore(trx, this.caps));
    });
  }

  async hasActiveAdminKey(): Promise<boolean> {
    const row = await this.db
      .selectFrom('api_keys')
      .select('id')
      .where('role', '=', 'admin')
      .where('revoked_at', 'is', null)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async insertKey(row: ApiKeyRow): Promise<void> {
    await this.db.insertInto('api_keys').values(row).execute();
  }

  async findKeyByHash(keyHash: string): Promise<ApiKeyRow | undefined> {
    return this.db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
  }

  async findKey(id: string): Promise<ApiKeyRow | undefined> {
    return this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Compiled once per shape (see Statements): every key listing would otherwise build it anew. */
  async listKeys(window: Page, includeRevoked: boolean): Promise<Paged<ApiKeyRow>> {
    return paginateCompiled(this.db, this.statements, `keys:${includeRevoked}`, {}, () => {
      const query = this.db.selectFrom('api_keys').selectAll().orderBy('id');
      return includeRevoked ? query : query.where('revoked_at', 'is', null);
    }, window);
  }

  async revokedAmong(ids: string[]): Promise<string[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .select('id')
      .where(this.caps.inTextList('id', ids))
      .where('revoked_at', 'is not', null)
      .execute();
    return rows.map((row) => row.id);
  }

  /** Revokes the key and, when it did, runs `announce` in the same transaction; false when it was revoked already. */
  async revokeKey(id: string, at: number, announce: (trx: Db) => Promise<void>): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('api_keys')
        .set({ revoked_at: at })
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      const revoked = Number(result.numUpdatedRows) > 0;
      if (revoked) await announce(trx);
      return revoked;
    });
  }

  /** Revokes every unrevoked key with this name except the one given (bootstrap key rotation). */
  async revokeOtherKeysNamed(name: string, keepId: string, at: number): Promise<void> {
    await this.db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('name', '=', name)
      .where('id', '!=', keepId)
      .where('revoked_at', 'is', null)
      .execute();
  }

  async insertPublicKey(row: PublicKeyRow): Promise<void> {
    await this.db.insertInto('agent_public_keys').values(row).execute();
  }

  async listPublicKeys(agentId: string): Promise<PublicKeyRow[]> {
    return this.db.selectFrom('agent_public_keys').selectAll().where('agent_id', '=', agentId).orderBy('id').execute();
  }

  async deletePublicKey(agentId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('agent_public_keys')
      .where('agent_id', '=', agentId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Records a signature as used; false when it was already used (a replay). */
  async rememberSignature(signatureHash: string, expiresAt: number): Promise<boolean> {
    const result = await this.db
      .insertInto('signature_nonces')
      .values({ signature_hash: signatureHash, expires_at: expiresAt })
      .onConflict((oc) => oc.column('signature_hash').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async forgetSignaturesBefore(at: number): Promise<number> {
    const result = await this.db.deleteFrom('signature_nonces').where('expires_at', '<', at).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async getSetting(name: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst();
    return row?.value;
  }

  /** Stores a setting unless one exists; returns the value that is stored now (first writer wins). */
  async ensureSetting(name: string, value: string, at: number): Promise<string> {
    await this.db
      .insertInto('settings')
      .values({ name, value, updated_at: at })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    return (await this.getSetting(name)) ?? value;
  }
}
