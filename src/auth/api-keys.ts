import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId, newSecret } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditTrail, EventLog } from '../kernel/ports.js';
import { sha256Hex } from '../kernel/sha256.js';
import type { CredentialEndings } from './credential-endings.js';
import { grantable, missingFrom, permissionsOf, ROLES, type Permission, type Role } from './permissions.js';
import type { ApiKeyRow, AuthStore, UserRow } from './store.js';

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

/** What revoking an API key took with it. */
export interface RevokedKey {
  id: string;
  /** The public keys the API key had registered, deleted with it. */
  public_keys_deleted: string[];
}

export const KEY_PREFIX = 'sk_';
const BOOTSTRAP_KEY_NAME = 'bootstrap';
/** Key events are for admins: they name every agent's keys. */
const ADMINS_ONLY = { agents: [] };

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

/** The permission names a key is narrowed to; null: its whole role. */
export function scopesOf(row: ApiKeyRow): string[] | null {
  return row.scopes === null ? null : (JSON.parse(row.scopes) as string[]);
}

/**
 * API keys: created (never with a permission its creator lacks, and for a user never above the
 * user's role), listed, revoked with everything they vouched for, and the admin key a new
 * install starts with. Revocations end on every node at once (CredentialEndings).
 */
export class ApiKeys {
  constructor(
    private readonly deps: {
      store: AuthStore;
      clock: Clock;
      /** key.created, key.revoked (admins only). */
      events: EventLog;
      audit: AuditTrail;
      endings: CredentialEndings;
    },
  ) {}

  private get store(): AuthStore {
    return this.deps.store;
  }

  /** `creator`: who asks (the key.created event's actor); the key gets no permission it lacks (403). */
  async create(input: CreateKeyInput, creator: KeyCreator): Promise<ApiKey & { key: string }> {
    const user = input.user_id === undefined ? null : await this.keyUser(input, creator);
    const role = input.role ?? user?.role ?? 'agent';
    if (role === 'agent' && input.agent_id === undefined) {
      throw InvalidRequest.field(
        user ? 'role' : 'agent_id',
        user ? 'cannot be agent for a key bound to a user' : 'is required for an agent key',
      );
    }
    const scopes = input.scopes === undefined ? null : [...new Set(input.scopes)];
    const allowed = grantable(role);
    const foreign = scopes?.filter((name) => !(allowed as string[]).includes(name)) ?? [];
    if (foreign.length > 0) {
      throw InvalidRequest.field(
        'scopes',
        `narrow the role: '${foreign.join("', '")}' is not among the ${role} role's permissions (${allowed.join(', ')})`,
      );
    }
    const expiresAt = input.expires_at === undefined ? null : Date.parse(input.expires_at);
    if (expiresAt !== null && !(expiresAt > this.deps.clock.now()))
      throw InvalidRequest.field('expires_at', 'must be a time in the future');
    const granted = permissionsOf(role, scopes);
    const lacking = missingFrom(creator.permissions, granted);
    if (lacking.length > 0) {
      throw new Forbidden(
        `Missing permission '${lacking[0]}': a key cannot be given a permission its creator lacks (${lacking.join(', ')})`,
      );
    }
    const beyondUser = user === null ? [] : missingFrom(new Set(ROLES[user.role]), granted);
    if (user !== null && beyondUser.length > 0) {
      throw InvalidRequest.field(
        'role',
        `is above the user's role ${user.role}: it would grant ${beyondUser.join(', ')} (narrow it with scopes, or pick a lesser role)`,
      );
    }
    return this.store.inTransaction(async (tx) => {
      const key = await this.insertKey(tx, newSecret(KEY_PREFIX), role, input.agent_id ?? null, input.name ?? null, {
        scopes,
        expiresAt,
        userId: user?.id ?? null,
      });
      await this.deps.audit.record(tx, { action: 'key.create', resource: { type: 'key', id: key.id } });
      const { key: _plain, ...shown } = key;
      await this.deps.events.append(tx, {
        type: 'key.created',
        subject: key.id,
        actor: creator.actor,
        data: { key: shown },
        readers: ADMINS_ONLY,
      });
      return key;
    });
  }

  /**
   * The user a key is created for: an enabled one, and the creator's own unless the creator
   * holds keys:admin (403 otherwise, as the route would have answered).
   */
  private async keyUser(input: CreateKeyInput, creator: KeyCreator): Promise<UserRow> {
    if (input.agent_id !== undefined)
      throw InvalidRequest.field('user_id', 'and agent_id exclude each other: a key acts as one user or one agent');
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
    const now = this.deps.clock.now();
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
  async list(window: Page, options: { includeRevoked?: boolean; userId?: string } = {}, caller?: KeyCreator): Promise<Paged<ApiKey>> {
    const userId = caller ? this.ownKeysOnly(caller, options.userId) : (options.userId ?? null);
    const result = await this.store.listKeys(autocommit, window, { includeRevoked: options.includeRevoked ?? false, userId });
    return mapPage(result, toApiKey);
  }

  /** The user whose keys a caller lists: any (or `requested`) with keys:admin, else their own only (403 for another's). */
  private ownKeysOnly(caller: KeyCreator, requested: string | undefined): string | null {
    if (caller.permissions.has('keys:admin')) return requested ?? null;
    assertReachesKeysOf(caller, requested ?? caller.user?.id ?? null);
    return caller.user!.id;
  }

  async get(id: string): Promise<ApiKey> {
    const row = await this.store.findKey(autocommit, id);
    if (!row) throw new NotFound('API key', id);
    return toApiKey(row);
  }

  /**
   * Revokes the key and deletes, in the same transaction, the public keys it registered and the
   * sessions it was exchanged for: nothing it vouched for outlives it. `actor` and `reason`: who
   * revokes and why (the key.revoked event's).
   */
  async revoke(id: string, actor: string, reason?: string, caller?: KeyCreator): Promise<RevokedKey> {
    const row = await this.store.findKey(autocommit, id);
    if (!row) throw new NotFound('API key', id);
    if (caller) assertReachesKeysOf(caller, row.user_id);
    if (row.revoked_at !== null) throw new Conflict(`API key '${id}' is already revoked`);
    const revoked = await this.deps.endings.endingCredentials(async (tx, end): Promise<RevokedKey | null> => {
      await this.deps.audit.record(tx, { action: 'key.revoke', resource: { type: 'key', id } });
      if (!(await this.store.revokeKey(tx, id, this.deps.clock.now()))) return null;
      const publicKeys = await this.store.deletePublicKeysRegisteredBy(tx, id);
      await end([id, ...(await this.store.deleteSessionsOf(tx, { keyId: id }))]);
      const data = { key: toApiKey(row), public_keys_deleted: publicKeys };
      await this.deps.events.append(tx, { type: 'key.revoked', subject: id, actor, data, reason, readers: ADMINS_ONLY });
      return { id, public_keys_deleted: publicKeys };
    });
    if (!revoked) throw new Conflict(`API key '${id}' is already revoked`);
    return revoked;
  }

  /**
   * Makes sure an admin key exists, so that a new install can be administered: the configured
   * one, else the one in `<data dir>/admin.key`, else, while the database has no admin key at
   * all, a new one written there (mode 0600) and logged once. Under the bootstrap lock, so of the nodes that start
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
        await this.store.revokeOtherKeysNamed(tx, BOOTSTRAP_KEY_NAME, key.id, this.deps.clock.now());
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
