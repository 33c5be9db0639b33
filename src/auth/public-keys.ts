import { autocommit } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, InvalidRequest, NotFound, Unauthorized } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { AuditTrail } from '../kernel/ports.js';
import { sha256Hex } from '../kernel/sha256.js';
import { normalizePublicKey } from './signing.js';
import type { AuthStore, PublicKeyRow } from './store.js';

export interface PublicKey {
  id: string;
  agent_id: string;
  public_key: string;
  fingerprint: string;
  /** The agent API key that registered it: revoking that key deletes it. Null: an admin's, or registered before this was recorded. */
  registered_by_key_id: string | null;
  created_at: string;
}

function toPublicKey(row: PublicKeyRow): PublicKey {
  return {
    id: row.id,
    agent_id: row.agent_id,
    public_key: row.public_key,
    fingerprint: row.fingerprint,
    registered_by_key_id: row.registered_by_key_id,
    created_at: iso(row.created_at),
  };
}

/**
 * The agents' Ed25519 public keys, which their signed requests are verified with. A key an
 * agent registers hangs on the API key it registered it with: revoking that deletes it too.
 */
export class PublicKeys {
  constructor(private readonly deps: { store: AuthStore; clock: Clock; audit: AuditTrail }) {}

  /**
   * Registers a public key for `agentId`. `registeredBy`: the agent API key the caller's access
   * hangs on (Principal.grantingKeyId), recorded so that revoking it deletes this key too; null
   * for an admin's, which stays until deleted.
   */
  async add(agentId: string, publicKey: string, registeredBy: string | null): Promise<PublicKey> {
    const { store } = this.deps;
    const normalized = normalizePublicKey(publicKey);
    if (normalized === null) {
      throw InvalidRequest.field('public_key', 'must be an Ed25519 public key: base64 of the raw 32 bytes, or PEM');
    }
    const now = this.deps.clock.now();
    const row: PublicKeyRow = {
      id: newId('pk', now),
      agent_id: agentId,
      public_key: normalized,
      fingerprint: sha256Hex(Buffer.from(normalized, 'base64')),
      registered_by_key_id: registeredBy,
      created_at: now,
    };
    try {
      await store.inTransaction(async (tx) => {
        await this.deps.audit.record(tx, { action: 'public_key.create', resource: { type: 'public_key', id: row.id } });
        // Checked under the key's lock: a revocation that commits first is seen here, and one
        // that waits for this insert deletes what it inserted.
        if (registeredBy !== null && (await store.lockKey(tx, registeredBy))?.revoked_at !== null) {
          throw new Unauthorized('API key has been revoked');
        }
        await store.insertPublicKey(tx, row);
      });
    } catch (err) {
      if (err instanceof Unauthorized) throw err;
      if ((await store.listPublicKeys(autocommit, agentId)).some((k) => k.fingerprint === row.fingerprint)) {
        throw new Conflict('This public key is already registered for the agent');
      }
      throw err;
    }
    return toPublicKey(row);
  }

  async list(agentId: string): Promise<PublicKey[]> {
    return (await this.deps.store.listPublicKeys(autocommit, agentId)).map(toPublicKey);
  }

  async delete(agentId: string, keyId: string): Promise<void> {
    const { store } = this.deps;
    await store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'public_key.delete', resource: { type: 'public_key', id: keyId } });
      if (!(await store.deletePublicKey(tx, agentId, keyId))) throw new NotFound('Public key', keyId);
    });
  }
}
