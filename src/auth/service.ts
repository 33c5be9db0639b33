import { timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { autocommit, type Tx } from '../db/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound, Unauthorized } from '../kernel/errors.js';
import { newId, newSecret } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import type { AuditTrail, EventLog } from '../kernel/ports.js';
import { sha256Hex } from '../kernel/sha256.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { CredentialCache } from './credential-cache.js';
import { grantable, missingFrom, permissionsOf, ROLES, type Permission, type Role } from './permissions.js';
import type { Principal } from './principal.js';
import { decodeSignature, normalizePublicKey, SIGNATURE_WINDOW_MS, signingString, verifySignature } from './signing.js';
import type { ApiKeyRow, AuthStore, PublicKeyRow, UserRow } from './store.js';

export interface ApiKey {
  id: string;
  name: string | null;
  role: Role;
  agent_id: string | null;
  user_id: string | null;
  /** Permission names narrowing the role; null: the whole role. */
  scopes: string[] | null;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  expires_at: string | null;
  last_used_at: string | null;
}

export interface CreateKeyInput {
  agent_id?: string;
  user_id?: string;
  role?: Role;
  scopes?: string[];
  expires_at?: string;
  name?: string;
}

/**
 * Who creates a key: recorded as the event's actor; the key can have no permission it lacks.
 * One without keys:admin creates keys only for themselves (`user`: the user it acts as).
 */
export interface KeyCreator {
  actor: string;
  permissions: ReadonlySet<Permission>;
  user?: { id: string } | null;
}

/** Keys of `userId` (null: of no user) are the caller's to reach: with keys:admin any, else only their own (403). */
function assertReachesKeysOf(caller: KeyCreator, userId: string | null): void {
  if (caller.permissions.has('keys:admin') || (userId !== null && userId === caller.user?.id)) return;
  throw new Forbidden("Missing permission 'keys:admin': without it, a user reaches only their own keys");
}

export interface PublicKey {
  id: string;
  agent_id: string;
  public_key: string;
  fingerprint: string;
  /** The agent API key that registered it: revoking that key deletes it. Null: an admin's, or registered before this was recorded. */
  registered_by_key_id: string | null;
  created_at: string;
}

/** What revoking an API key took with it. */
export interface RevokedKey {
  id: string;
  /** The public keys the API key had registered, deleted with it. */
  public_keys_deleted: string[];
}

/** The signature headers of a request (design §3). */
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

const KEY_PREFIX = 'sk_';
const BOOTSTRAP_KEY_NAME = 'bootstrap';

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    agent_id: row.agent_id,
    user_id: row.user_id,
    scopes: scopesOf(row),
    prefix: row.prefix,
    created_at: iso(row.created_at),
    revoked_at: iso(row.revoked_at),
    expires_at: iso(row.expires_at),
    last_used_at: iso(row.last_used_at),
  };
}

function scopesOf(row: ApiKeyRow): string[] | null {
  return row.scopes === null ? null : (JSON.parse(row.scopes) as string[]);
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

/**
 * Channel on which the end of a credential (an API key revoked, a session ended, the keys and
 * sessions of a user disabled) tells every node to forget it at once.
 */
const ENDED_CHANNEL = 'auth:key-revoked';
/** The longest an ending waits to hear its own announcements (a lost notice must not hang it). */
const HEAR_ENDING_MS = 2000;
/** Key events are for admins: they name every agent's keys. */
const ADMINS_ONLY = { agents: [] };
const LAST_USED_MAX = 10_000;
/** last_used_at is written at most this often per key and node: never a write per request. */
const LAST_USED_EVERY_MS = 60_000;

interface CachedKey {
  principal: Principal;
  expiresAt: number | null;
}

/** The work of `AuthService.endingCredentials`: `end` announces credentials ending in its transaction. */
export type EndingWork<T> = (tx: Tx, end: (credentials: readonly string[]) => Promise<void>) => Promise<T>;

export class AuthService {
  /** key hash → principal (see authenticateKey). */
  private readonly keyCache: CredentialCache<CachedKey>;
  /** key id → when this node last wrote its last_used_at. */
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly revocationListeners = new Set<(keyId: string) => void>();
  private readonly stopListening: () => void;

  /** `dataVersion`: the database's (SQLite's), which tells of revocations by other processes. */
  constructor(
    private readonly store: AuthStore,
    private readonly clock: Clock,
    private readonly notifier: Notifier,
    /** key.created, key.revoked (admins only). */
    private readonly events: EventLog,
    private readonly audit: AuditTrail,
    dataVersion: (() => number) | null = null,
  ) {
    this.keyCache = new CredentialCache(notifier, dataVersion);
    this.stopListening = notifier.listen(ENDED_CHANNEL, (credential) => this.forget(credential));
  }

  close(): void {
    this.stopListening();
    this.keyCache.clear();
    this.revocationListeners.clear();
  }

  /** Calls `listener` with each credential (key, session) ended that this node hears of (possibly twice). */
  onRevoked(listener: (credential: string) => void): () => void {
    this.revocationListeners.add(listener);
    return () => this.revocationListeners.delete(listener);
  }

  /** Those of the given credentials (key and session ids) that no longer authenticate. */
  async endedAmong(credentials: string[]): Promise<string[]> {
    const keys = credentials.filter((id) => id.startsWith('key_'));
    const sessions = credentials.filter((id) => !id.startsWith('key_'));
    const ended = keys.length > 0 ? await this.store.endedKeysAmong(autocommit, keys) : [];
    if (sessions.length === 0) return ended;
    const live = new Set(await this.store.liveSessionsAmong(autocommit, sessions, this.clock.now()));
    return [...ended, ...sessions.filter((id) => !live.has(id))];
  }

  private forget(credential: string): void {
    this.keyCache.forget(credential);
    for (const listener of this.revocationListeners) listener(credential);
  }

  /**
   * Runs `work` in a transaction in which `end` announces credentials ending: PostgreSQL
   * delivers the announcement to every node at commit, and a crash cannot commit the one
   * without the other. Resolves once this node has heard them too: by then the other nodes'
   * listeners have been sent them, so a request the caller makes next to another node finds
   * them gone (an ending is immediate).
   */
  async endingCredentials<T>(work: EndingWork<T>): Promise<T> {
    const announced = new Set<string>();
    const heard = new Set<string>();
    let allHeard = () => {};
    const stop = this.notifier.listen(ENDED_CHANNEL, (credential) => {
      heard.add(credential);
      if ([...announced].every((id) => heard.has(id))) allHeard();
    });
    try {
      const result = await this.store.inTransaction((tx) =>
        work(tx, async (credentials) => {
          for (const credential of credentials) {
            announced.add(credential);
            await this.notifier.notifyIn(tx, ENDED_CHANNEL, credential);
          }
        }),
      );
      if ([...announced].some((id) => !heard.has(id))) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, HEAR_ENDING_MS);
          allHeard = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      for (const credential of announced) this.forget(credential);
      return result;
    } finally {
      stop();
    }
  }

  /** `creator`: who asks (the key.created event's actor); the key gets no permission it lacks (403). */
  async createKey(input: CreateKeyInput, creator: KeyCreator): Promise<ApiKey & { key: string }> {
    const user = input.user_id === undefined ? null : await this.keyUser(input, creator);
    const role = input.role ?? user?.role ?? 'agent';
    if (role === 'agent' && input.agent_id === undefined) {
      throw InvalidRequest.field(user ? 'role' : 'agent_id', user ? 'cannot be agent for a key bound to a user' : 'is required for an agent key');
    }
    const scopes = input.scopes === undefined ? null : [...new Set(input.scopes)];
    const allowed = grantable(role);
    const foreign = scopes?.filter((name) => !(allowed as string[]).includes(name)) ?? [];
    if (foreign.length > 0) {
      throw InvalidRequest.field('scopes', `narrow the role: '${foreign.join("', '")}' is not among the ${role} role's permissions (${allowed.join(', ')})`);
    }
    const expiresAt = input.expires_at === undefined ? null : Date.parse(input.expires_at);
    if (expiresAt !== null && !(expiresAt > this.clock.now())) throw InvalidRequest.field('expires_at', 'must be a time in the future');
    const granted = permissionsOf(role, scopes);
    const lacking = missingFrom(creator.permissions, granted);
    if (lacking.length > 0) {
      throw new Forbidden(`Missing permission '${lacking[0]}': a key cannot be given a permission its creator lacks (${lacking.join(', ')})`);
    }
    const beyondUser = user === null ? [] : missingFrom(new Set(ROLES[user.role]), granted);
    if (user !== null && beyondUser.length > 0) {
      throw InvalidRequest.field('role', `is above the user's role ${user.role}: it would grant ${beyondUser.join(', ')} (narrow it with scopes, or pick a lesser role)`);
    }
    return this.store.inTransaction(async (tx) => {
      const key = await this.insertKey(tx, newSecret(KEY_PREFIX), role, input.agent_id ?? null, input.name ?? null, { scopes, expiresAt, userId: user?.id ?? null });
      await this.audit.record(tx, { action: 'key.create', resource: { type: 'key', id: key.id } });
      const { key: _plain, ...shown } = key;
      await this.events.append(tx, { type: 'key.created', subject: key.id, actor: creator.actor, data: { key: shown }, readers: ADMINS_ONLY });
      return key;
    });
  }

  /**
   * The user a key is created for: an enabled one, and the creator's own unless the creator
   * holds keys:admin (403 otherwise, as the route would have answered).
   */
  private async keyUser(input: CreateKeyInput, creator: KeyCreator): Promise<UserRow> {
    if (input.agent_id !== undefined) throw InvalidRequest.field('user_id', 'and agent_id exclude each other: a key acts as one user or one agent');
    if (!creator.permissions.has('keys:admin') && creator.user?.id !== input.user_id) {
      throw new Forbidden("Missing permission 'keys:admin': without it, a user creates keys only for themselves");
    }
    const user = await this.store.findUser(autocommit, input.user_id!);
    if (!user) throw new NotFound('User', input.user_id);
    if (user.disabled_at !== null) throw new Conflict(`User '${user.username}' is disabled`);
    return user;
  }

  private async insertKey(
    tx: Tx,
    plain: string,
    role: Role,
    agentId: string | null,
    name: string | null,
    limits: { scopes: string[] | null; expiresAt: number | null; userId: string | null } = { scopes: null, expiresAt: null, userId: null },
  ) {
    const now = this.clock.now();
    const row: ApiKeyRow = {
      id: newId('key', now),
      name,
      role,
      agent_id: agentId,
      user_id: limits.userId,
      key_hash: sha256Hex(plain),
      prefix: plain.slice(0, KEY_PREFIX.length + 6),
      created_at: now,
      revoked_at: null,
      scopes: limits.scopes === null ? null : JSON.stringify(limits.scopes),
      expires_at: limits.expiresAt,
      last_used_at: null,
    };
    await this.store.insertKey(tx, row);
    return { ...toApiKey(row), key: plain };
  }

  /**
   * Keys, those of one user with `userId`. A caller without keys:admin (a user, as the route
   * lets through) lists only their own: the default, and any other user → 403.
   */
  async listKeys(window: Page, options: { includeRevoked?: boolean; userId?: string } = {}, caller?: KeyCreator): Promise<Paged<ApiKey>> {
    const userId = caller ? this.ownKeysOnly(caller, options.userId) : (options.userId ?? null);
    const result = await this.store.listKeys(autocommit, window, { includeRevoked: options.includeRevoked ?? false, userId });
    return { items: result.items.map(toApiKey), total: result.total };
  }

  /** The user whose keys a caller lists: any (or `requested`) with keys:admin, else their own only (403 for another's). */
  private ownKeysOnly(caller: KeyCreator, requested: string | undefined): string | null {
    if (caller.permissions.has('keys:admin')) return requested ?? null;
    assertReachesKeysOf(caller, requested ?? caller.user?.id ?? null);
    return caller.user!.id;
  }

  async getKey(id: string): Promise<ApiKey> {
    const row = await this.store.findKey(autocommit, id);
    if (!row) throw new NotFound('API key', id);
    return toApiKey(row);
  }

  /**
   * Revokes the key and deletes, in the same transaction, the public keys it registered and the
   * sessions it was exchanged for: nothing it vouched for outlives it. `actor` and `reason`: who
   * revokes and why (the key.revoked event's).
   */
  async revokeKey(id: string, actor: string, reason?: string, caller?: KeyCreator): Promise<RevokedKey> {
    const row = await this.store.findKey(autocommit, id);
    if (!row) throw new NotFound('API key', id);
    if (caller) assertReachesKeysOf(caller, row.user_id);
    if (row.revoked_at !== null) throw new Conflict(`API key '${id}' is already revoked`);
    const revoked = await this.endingCredentials(async (tx, end): Promise<RevokedKey | null> => {
      await this.audit.record(tx, { action: 'key.revoke', resource: { type: 'key', id } });
      if (!(await this.store.revokeKey(tx, id, this.clock.now()))) return null;
      const publicKeys = await this.store.deletePublicKeysRegisteredBy(tx, id);
      await end([id, ...(await this.store.deleteSessionsOf(tx, { keyId: id }))]);
      const data = { key: toApiKey(row), public_keys_deleted: publicKeys };
      await this.events.append(tx, { type: 'key.revoked', subject: id, actor, data, reason, readers: ADMINS_ONLY });
      return { id, public_keys_deleted: publicKeys };
    });
    if (!revoked) throw new Conflict(`API key '${id}' is already revoked`);
    return revoked;
  }

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
   * Registers a public key for `agentId`. `registeredBy`: the agent API key the caller's access
   * hangs on (Principal.grantingKeyId), recorded so that revoking it deletes this key too; null
   * for an admin's, which stays until deleted.
   */
  async addPublicKey(agentId: string, publicKey: string, registeredBy: string | null): Promise<PublicKey> {
    const normalized = normalizePublicKey(publicKey);
    if (normalized === null) {
      throw InvalidRequest.field('public_key', 'must be an Ed25519 public key: base64 of the raw 32 bytes, or PEM');
    }
    const now = this.clock.now();
    const row: PublicKeyRow = {
      id: newId('pk', now),
      agent_id: agentId,
      public_key: normalized,
      fingerprint: sha256Hex(Buffer.from(normalized, 'base64')),
      registered_by_key_id: registeredBy,
      created_at: now,
    };
    try {
      await this.store.inTransaction(async (tx) => {
        await this.audit.record(tx, { action: 'public_key.create', resource: { type: 'public_key', id: row.id } });
        // Checked under the key's lock: a revocation that commits first is seen here, and one
        // that waits for this insert deletes what it inserted.
        if (registeredBy !== null && (await this.store.lockKey(tx, registeredBy))?.revoked_at !== null) {
          throw new Unauthorized('API key has been revoked');
        }
        await this.store.insertPublicKey(tx, row);
      });
    } catch (err) {
      if (err instanceof Unauthorized) throw err;
      if ((await this.store.listPublicKeys(autocommit, agentId)).some((k) => k.fingerprint === row.fingerprint)) {
        throw new Conflict('This public key is already registered for the agent');
      }
      throw err;
    }
    return toPublicKey(row);
  }

  async listPublicKeys(agentId: string): Promise<PublicKey[]> {
    return (await this.store.listPublicKeys(autocommit, agentId)).map(toPublicKey);
  }

  async deletePublicKey(agentId: string, keyId: string): Promise<void> {
    await this.store.inTransaction(async (tx) => {
      await this.audit.record(tx, { action: 'public_key.delete', resource: { type: 'public_key', id: keyId } });
      if (!(await this.store.deletePublicKey(tx, agentId, keyId))) throw new NotFound('Public key', keyId);
    });
  }

  /**
   * A secret shared by every node (e.g. the key of signed URLs): generated by whichever node asks
   * first and kept in the settings table; later callers get the stored one.
   */
  async sharedSecret(name: string): Promise<string> {
    return this.store.ensureSetting(autocommit, name, newSecret(), this.clock.now());
  }

  /** Drops remembered signatures once they are too old to be replayed anyway. */
  async sweepSignatures(): Promise<number> {
    return this.store.forgetSignaturesBefore(autocommit, this.clock.now());
  }

  /**
   * Makes sure an admin key exists (design §1): the configured one, else the one in
   * `<data dir>/admin.key`, else, while the database has no admin key at all, a new one written
   * there (mode 0600) and logged once. Under the bootstrap lock, so of the nodes that start
   * together on one PostgreSQL database without a configured key only the first makes one.
   */
  async ensureAdminKey(configured: string | null, dataDir: string, logger: Logger): Promise<void> {
    const file = path.join(dataDir, 'admin.key');
    const outcome = await this.store.inTransaction(async (tx): Promise<'kept' | 'generated' | 'elsewhere'> => {
      await this.store.lockBootstrap(tx);
      if (configured !== null) {
        const existing = await this.store.findKeyByHash(tx, sha256Hex(configured));
        if (existing && existing.revoked_at === null) return 'kept';
        if (existing) throw new Error('SWITCHBOARD_ADMIN_KEY has been revoked; configure a new one');
        const key = await this.insertKey(tx, configured, 'admin', null, BOOTSTRAP_KEY_NAME);
        await this.store.revokeOtherKeysNamed(tx, BOOTSTRAP_KEY_NAME, key.id, this.clock.now());
        return 'kept';
      }
      if (fs.existsSync(file)) {
        const plain = fs.readFileSync(file, 'utf8').trim();
        const existing = await this.store.findKeyByHash(tx, sha256Hex(plain));
        if (!existing) await this.insertKey(tx, plain, 'admin', null, BOOTSTRAP_KEY_NAME);
        return 'kept';
      }
      if (await this.store.hasActiveAdminKey(tx)) return 'elsewhere';
      const key = await this.insertKey(tx, newSecret(KEY_PREFIX), 'admin', null, BOOTSTRAP_KEY_NAME);
      // Written before the commit: should the commit fail, the next start inserts it from the file.
      fs.mkdirSync(dataDir, { recursive: true });
      fs.writeFileSync(file, `${key.key}\n`, { mode: 0o600 });
      logger.info({ file }, `generated admin key (shown once): ${key.key}`);
      return 'generated';
    });
    if (outcome === 'elsewhere') {
      logger.info(
        'no admin key generated: the database has one already (set SWITCHBOARD_ADMIN_KEY on every node, or create one with `switchboard keys create --role admin`)',
      );
    }
  }
}
