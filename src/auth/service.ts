import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { autocommit } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Unauthorized } from '../kernel/errors.js';
import { newSecret } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import type { AuditTrail, EventLog, NodeRegistry } from '../kernel/ports.js';
import { sha256Hex } from '../kernel/sha256.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { ApiKeys, KEY_PREFIX, scopesOf, type ApiKey, type CreateKeyInput, type KeyCreator, type RevokedKey } from './api-keys.js';
import { CredentialCache } from './credential-cache.js';
import { CredentialEndings, type EndingWork } from './credential-endings.js';
import { permissionsOf, ROLES, type Permission } from './permissions.js';
import type { Principal } from './principal.js';
import { PublicKeys, type PublicKey } from './public-keys.js';
import { decodeSignature, SIGNATURE_WINDOW_MS, signingString, verifySignature } from './signing.js';
import type { ApiKeyRow, AuthStore, PublicKeyRow, UserRow } from './store.js';

/** The signature headers of a request: X-Agent-ID, X-Timestamp and X-Signature. */
export interface SignatureHeaders {
  agentId: string;
  timestamp: string;
  signature: string;
}

/**
 * A signed request that passed the checks possible before its body is read; its signature is
 * verified once the body's hash is known.
 */
export interface PendingSignature {
  agentId: string;
  timestamp: string;
  sentAt: number;
  signature: Buffer;
  /** The agent's registered keys: raw base64, and the API key that registered each. */
  publicKeys: Pick<PublicKeyRow, 'public_key' | 'registered_by_key_id'>[];
}

/** Signed requests come from agents: the agent role. */
const SIGNED_PERMISSIONS = permissionsOf('agent', null);

/** A person's principal: `permissions` at most their role's (a key bound to them may be narrower). */
export function principalOfUser(user: UserRow, permissions: ReadonlySet<Permission>, keyId: string | null): Principal {
  const own = ROLES[user.role];
  return {
    kind: 'user',
    role: user.role,
    permissions: new Set([...permissions].filter((name) => own.includes(name))),
    agentId: null,
    keyId,
    grantingKeyId: null,
    user: { id: user.id, username: user.username },
    session: null,
    actor: `user:${user.username}`,
    bucket: `user:${user.id}`,
  };
}

/** A key's principal; `user`: the user a key bound to one acts as (looked up with it). */
export function principalOfKey(row: ApiKeyRow, user: UserRow | null): Principal {
  const permissions = permissionsOf(row.role, scopesOf(row));
  if (user !== null) return { ...principalOfUser(user, permissions, row.id), role: row.role };
  return {
    kind: row.role === 'agent' ? 'agent' : row.role === 'admin' ? 'admin' : 'key',
    role: row.role,
    permissions,
    agentId: row.agent_id,
    keyId: row.id,
    grantingKeyId: row.role === 'agent' ? row.id : null,
    user: null,
    session: null,
    actor: row.agent_id ?? (row.role === 'admin' ? 'admin' : `key:${row.id}`),
    bucket: row.agent_id !== null ? `agent:${row.agent_id}` : `key:${row.id}`,
  };
}

/** Why a user's credentials are refused, or null when they are not. */
export function userRefusal(user: UserRow | undefined): string | null {
  if (user === undefined) return 'The user of these credentials has been deleted';
  return user.disabled_at !== null ? 'The user of these credentials is disabled' : null;
}

const LAST_USED_MAX = 10_000;
/** last_used_at is written at most this often per key and node: never a write per request. */
const LAST_USED_EVERY_MS = 60_000;

interface CachedKey {
  principal: Principal;
  expiresAt: number | null;
}

/**
 * Authentication: who a request is, from an API key (resolved from memory once seen) or from an
 * Ed25519 signature, and the end of credentials on every node. The auth domain's door for
 * everything else: it hands API keys to api-keys.ts, agents' public keys to public-keys.ts and
 * the ending of credentials to credential-endings.ts.
 */
export class AuthService {
  /** key hash → principal (see authenticateKey). */
  private readonly keyCache: CredentialCache<CachedKey>;
  /** key id → when this node last wrote its last_used_at. */
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly endings: CredentialEndings;
  private readonly keys: ApiKeys;
  private readonly publicKeys: PublicKeys;

  /** `dataVersion`: the database's (SQLite's), which tells of revocations by other processes. */
  constructor(
    private readonly store: AuthStore,
    private readonly clock: Clock,
    notifier: Notifier,
    /** key.created, key.revoked (admins only). */
    events: EventLog,
    audit: AuditTrail,
    dataVersion: (() => number) | null = null,
  ) {
    this.keyCache = new CredentialCache(notifier, dataVersion);
    this.endings = new CredentialEndings({ store, clock, notifier });
    // First among the listeners: a key ended is forgotten before anyone else hears of it.
    this.endings.onEnded((credential) => this.keyCache.forget(credential));
    this.keys = new ApiKeys({ store, clock, events, audit, endings: this.endings });
    this.publicKeys = new PublicKeys({ store, clock, audit });
  }

  close(): void {
    this.endings.close();
    this.keyCache.clear();
  }

  // ---- the end of credentials (CredentialEndings) ----

  /** Calls `listener` with each credential (key, session) ended that this node hears of (possibly twice). */
  onRevoked(listener: (credential: string) => void): () => void {
    return this.endings.onEnded(listener);
  }

  /** Endings wait until every live node of the cluster has forgotten what they ended (CredentialEndings.confirmWith). */
  confirmEndingsWith(nodes: NodeRegistry): void {
    this.endings.confirmWith(nodes);
  }

  /** Those of the given credentials (key and session ids) that no longer authenticate. */
  endedAmong(credentials: string[]): Promise<string[]> {
    return this.endings.endedAmong(credentials);
  }

  /** Runs `work` in a transaction in which `end` announces credentials ending (CredentialEndings.endingCredentials). */
  endingCredentials<T>(work: EndingWork<T>): Promise<T> {
    return this.endings.endingCredentials(work);
  }

  // ---- API keys (ApiKeys) ----

  createKey(input: CreateKeyInput, creator: KeyCreator): Promise<ApiKey & { key: string }> {
    return this.keys.create(input, creator);
  }

  listKeys(window: Page, options: { includeRevoked?: boolean; userId?: string } = {}, caller?: KeyCreator): Promise<Paged<ApiKey>> {
    return this.keys.list(window, options, caller);
  }

  getKey(id: string): Promise<ApiKey> {
    return this.keys.get(id);
  }

  revokeKey(id: string, actor: string, reason?: string, caller?: KeyCreator): Promise<RevokedKey> {
    return this.keys.revoke(id, actor, reason, caller);
  }

  ensureAdminKey(configured: string | null, dataDir: string, logger: Logger): Promise<void> {
    return this.keys.ensureAdminKey(configured, dataDir, logger);
  }

  // ---- agents' public keys (PublicKeys) ----

  addPublicKey(agentId: string, publicKey: string, registeredBy: string | null): Promise<PublicKey> {
    return this.publicKeys.add(agentId, publicKey, registeredBy);
  }

  listPublicKeys(agentId: string): Promise<PublicKey[]> {
    return this.publicKeys.list(agentId);
  }

  deletePublicKey(agentId: string, keyId: string): Promise<void> {
    return this.publicKeys.delete(agentId, keyId);
  }

  // ---- authentication ----

  /**
   * Resolves a bearer token to its principal, or throws 401. A key seen before resolves at
   * once, without a promise: every request with a key comes here. A cached key holds until a
   * revocation could have been missed: this node forgets a key on its own revocations and on
   * the notifications of other nodes (or of the CLI on PostgreSQL), so it drops everything it
   * cached when those may have been lost (a new notifier epoch) or when another process wrote
   * to the SQLite file (the CLI). Revocation is effective on the next request either way.
   */
  authenticateKey(plain: string): Principal | Promise<Principal> {
    if (!plain.startsWith(KEY_PREFIX) || plain.length > 200) throw new Unauthorized('Malformed API key');
    const hash = sha256Hex(plain);
    const cached = this.keyCache.get(hash);
    if (cached) return this.admitKey(cached.principal, cached.expiresAt);
    return this.lookUpKey(hash);
  }

  /** A known key, unless it has expired; notes its use (written at most once a minute). */
  private admitKey(principal: Principal, expiresAt: number | null): Principal {
    const now = this.clock.now();
    if (expiresAt !== null && now >= expiresAt) throw new Unauthorized(`API key expired at ${iso(expiresAt)}`);
    const keyId = principal.keyId!;
    const written = this.lastUsedWritten.get(keyId);
    if (written === undefined || now - written >= LAST_USED_EVERY_MS) {
      if (this.lastUsedWritten.size >= LAST_USED_MAX) this.lastUsedWritten.clear();
      this.lastUsedWritten.set(keyId, now);
      // Not awaited: the request does not wait for bookkeeping, and a failed write is retried a minute later.
      this.store.touchKey(autocommit, keyId, now).catch(() => this.lastUsedWritten.delete(keyId));
    }
    return principal;
  }

  private async lookUpKey(hash: string): Promise<Principal> {
    const stamp = this.keyCache.stamp();
    const row = await this.store.findKeyByHash(autocommit, hash);
    // The lookup is by hash, so timing reveals nothing about the key; the explicit
    // constant-time comparison keeps that true if the lookup ever changes.
    if (!row || !timingSafeEqual(Buffer.from(row.key_hash, 'hex'), Buffer.from(hash, 'hex'))) {
      throw new Unauthorized('Unknown API key');
    }
    if (row.revoked_at !== null) throw new Unauthorized('API key has been revoked');
    const principal = await this.keyPrincipal(row);
    this.keyCache.set(hash, { principal, expiresAt: row.expires_at }, [row.id], stamp);
    return this.admitKey(principal, row.expires_at);
  }

  /** The principal of an unrevoked key; 401 when it is bound to a user who is disabled or gone. */
  async keyPrincipal(row: ApiKeyRow): Promise<Principal> {
    if (row.user_id === null) return principalOfKey(row, null);
    const user = await this.store.findUser(autocommit, row.user_id);
    const refusal = userRefusal(user);
    if (refusal !== null) throw new Unauthorized(refusal);
    return principalOfKey(row, user!);
  }

  // ---- signed requests ----

  /**
   * The checks of a signed request that need no body: a canonical signature, a fresh timestamp
   * and a registered key. A request failing them is refused before its body is read.
   */
  async checkSignatureHeaders(headers: SignatureHeaders): Promise<PendingSignature> {
    const signature = decodeSignature(headers.signature);
    if (signature === null) {
      throw new Unauthorized('X-Signature must be the padded standard base64 of a 64-byte Ed25519 signature');
    }
    const sentAt = Date.parse(headers.timestamp);
    if (Number.isNaN(sentAt)) throw new Unauthorized('X-Timestamp must be an ISO 8601 time');
    this.checkFresh(sentAt);
    const keys = await this.store.listPublicKeys(autocommit, headers.agentId);
    if (keys.length === 0) throw new Unauthorized(`No public key registered for agent '${headers.agentId}'`);
    return { ...headers, sentAt, signature, publicKeys: keys };
  }

  /** Verifies a pending signature over the request's method, path and body hash; returns the agent principal. */
  async verifySignature(
    pending: PendingSignature,
    request: { method: string; pathWithQuery: string; bodySha256: string },
  ): Promise<Principal> {
    // Again: the body may have taken a while, and the replay guard forgets a signature once its window has passed.
    this.checkFresh(pending.sentAt);
    const message = signingString(request.method, request.pathWithQuery, pending.timestamp, request.bodySha256);
    const signer = pending.publicKeys.find((key) => verifySignature(message, pending.signature, key.public_key));
    if (!signer) throw new Unauthorized('Signature does not verify');
    // Keyed on the signature's bytes, so that no other text of the same signature passes as new.
    const fresh = await this.store.rememberSignature(autocommit, sha256Hex(pending.signature), pending.sentAt + SIGNATURE_WINDOW_MS);
    if (!fresh) throw new Unauthorized('Signature has already been used (replay)');
    return {
      kind: 'agent',
      role: 'agent',
      permissions: SIGNED_PERMISSIONS,
      agentId: pending.agentId,
      keyId: null,
      grantingKeyId: signer.registered_by_key_id,
      user: null,
      session: null,
      actor: pending.agentId,
      bucket: `agent:${pending.agentId}`,
    };
  }

  private checkFresh(sentAt: number): void {
    if (Math.abs(this.clock.now() - sentAt) > SIGNATURE_WINDOW_MS) {
      throw new Unauthorized('X-Timestamp is more than 300 s away from the server time');
    }
  }

  /**
   * A secret shared by every node (e.g. the key of signed URLs): generated by whichever node asks
   * first and kept in the settings table; later callers get the stored one.
   */
  async sharedSecret(name: string): Promise<string> {
    return this.store.ensureSetting(autocommit, name, newSecret(), this.clock.now());
  }

  /** Drops remembered signatures once they are too old to be replayed anyway. */
  /** Retention: deletes up to `limit` remembered signatures past their replay window at `now`. */
  async forgetExpiredSignatures(now: number, limit: number): Promise<number> {
    return this.store.forgetSignaturesBefore(autocommit, now, limit);
  }
}
