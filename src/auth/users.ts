import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditTrail } from '../kernel/ports.js';
import { hashPassword } from './passwords.js';
import { missingFrom, ROLES, type Permission, type Role } from './permissions.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, USERNAME_PATTERN } from './schemas.js';
import type { AuthService } from './service.js';
import type { AuthStore, UserRow } from './store.js';

const USERNAME = new RegExp(USERNAME_PATTERN);

/** The roles a person may have: every role but agent's. */
export type UserRole = Exclude<Role, 'agent'>;

export interface User {
  id: string;
  username: string;
  display_name: string | null;
  role: Role;
  disabled: boolean;
  /** Whether the user can sign in with a password (else only with keys bound to them). */
  has_password: boolean;
  created_at: string;
  updated_at: string;
}

export interface CreateUserInput {
  username: string;
  role: UserRole;
  display_name?: string;
  password?: string;
}

export interface UpdateUserInput {
  role?: UserRole;
  display_name?: string | null;
  disabled?: boolean;
  password?: string;
}

/** A user's identity at an OIDC provider: its issuer and the `sub` it gives the user. */
export interface OidcIdentity {
  issuer: string;
  subject: string;
}

/** Who manages users: a role they give cannot hold a permission they lack. */
export interface UserManager {
  permissions: ReadonlySet<Permission>;
}

function toUser(row: UserRow): User {
  return {
    id: row.id,
    username: row.username,
    display_name: row.display_name,
    role: row.role,
    disabled: row.disabled_at !== null,
    has_password: row.password_hash !== null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The same rules the route schemas state, for callers without them (the CLI). */
function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw InvalidRequest.field('password', `must have ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`);
  }
}

function checkGrant(manager: UserManager, role: Role): void {
  const lacking = missingFrom(manager.permissions, ROLES[role]);
  if (lacking.length > 0)
    throw new Forbidden(`Missing permission '${lacking[0]}': a user cannot be given a role with a permission the caller lacks`);
}

/**
 * People: users with a role, an optional scrypt password, and keys bound to them.
 * Disabling, deleting or changing the role of a user ends its sessions and cached keys on
 * every node before the answer (AuthService.endingCredentials), so the next request of any of
 * them sees the change; open connections (channels, streams) of those credentials end too.
 */
export class UsersService {
  constructor(
    private readonly deps: {
      store: AuthStore;
      clock: Clock;
      auth: AuthService;
      audit: AuditTrail;
    },
  ) {}

  /** `identity`: the OIDC provider's user this one is (OIDC sign-in creates users with it). */
  async create(input: CreateUserInput, manager: UserManager, identity: OidcIdentity | null = null): Promise<User> {
    if (!USERNAME.test(input.username)) throw InvalidRequest.field('username', `must match ${USERNAME_PATTERN}`);
    checkGrant(manager, input.role);
    if (input.password !== undefined) checkPassword(input.password);
    const { store, clock } = this.deps;
    if (await store.findUserByName(autocommit, input.username)) throw new Conflict(`A user named '${input.username}' exists already`);
    const now = clock.now();
    const row: UserRow = {
      id: newId('usr', now),
      username: input.username,
      display_name: input.display_name ?? null,
      role: input.role,
      password_hash: input.password === undefined ? null : await hashPassword(input.password),
      disabled_at: null,
      oidc_issuer: identity?.issuer ?? null,
      oidc_subject: identity?.subject ?? null,
      created_at: now,
      updated_at: now,
    };
    try {
      await store.inTransaction(async (tx) => {
        await this.deps.audit.record(tx, { action: 'user.create', resource: { type: 'user', id: row.id } });
        await store.insertUser(tx, row);
      });
    } catch (err) {
      // Two creations of one name at once: the unique index refused the second.
      if (await store.findUserByName(autocommit, input.username)) throw new Conflict(`A user named '${input.username}' exists already`);
      throw err;
    }
    return toUser(row);
  }

  async list(window: Page): Promise<Paged<User>> {
    const result = await this.deps.store.listUsers(autocommit, window);
    return mapPage(result, toUser);
  }

  async get(id: string): Promise<User> {
    return toUser(await this.row(id));
  }

  async getByName(username: string): Promise<User> {
    const user = await this.findByName(username);
    if (!user) throw new NotFound('User', username);
    return user;
  }

  async findByName(username: string): Promise<User | null> {
    const row = await this.deps.store.findUserByName(autocommit, username);
    return row ? toUser(row) : null;
  }

  /**
   * Disabling ends (deletes) the user's sessions and refuses its keys until it is enabled
   * again; a new role reaches its sessions and keys at their next request; a new password
   * ends its sessions.
   */
  async update(id: string, input: UpdateUserInput, manager: UserManager): Promise<User> {
    if (input.role !== undefined) checkGrant(manager, input.role);
    if (input.password !== undefined) checkPassword(input.password);
    const passwordHash = input.password === undefined ? undefined : await hashPassword(input.password);
    const { store, clock, auth } = this.deps;
    const before = await this.row(id);
    const now = clock.now();
    const disabling = input.disabled === true && before.disabled_at === null;
    const changes: Partial<UserRow> = { updated_at: now };
    if (input.role !== undefined) changes.role = input.role;
    if (input.display_name !== undefined) changes.display_name = input.display_name;
    if (input.disabled !== undefined) changes.disabled_at = input.disabled ? (before.disabled_at ?? now) : null;
    if (passwordHash !== undefined) changes.password_hash = passwordHash;
    const endsKeys = disabling || (input.role !== undefined && input.role !== before.role);
    const endsSessions = endsKeys || passwordHash !== undefined;
    return auth.endingCredentials(async (tx, end) => {
      await this.deps.audit.record(tx, { action: disabling ? 'user.disable' : 'user.update', resource: { type: 'user', id } });
      const row = await store.updateUser(tx, id, changes);
      if (!row) throw new NotFound('User', id);
      if (endsSessions)
        await end(await this.credentialsToEnd(tx, id, { keys: endsKeys, deleteSessions: disabling || passwordHash !== undefined }));
      return toUser(row);
    });
  }

  /** Deletes the user, revokes its keys and ends its sessions. */
  async delete(id: string): Promise<void> {
    const { store, clock, auth } = this.deps;
    await auth.endingCredentials(async (tx, end) => {
      await this.deps.audit.record(tx, { action: 'user.delete', resource: { type: 'user', id } });
      const credentials = await this.credentialsToEnd(tx, id, { keys: true, deleteSessions: true });
      if (!(await store.deleteUser(tx, id))) throw new NotFound('User', id);
      await store.revokeKeysOfUser(tx, id, clock.now());
      await end(credentials);
    });
  }

  private async credentialsToEnd(tx: Tx, userId: string, what: { keys: boolean; deleteSessions: boolean }): Promise<string[]> {
    const { store } = this.deps;
    const { keyIds, sessionIds } = await store.credentialsOfUser(tx, userId, what.keys);
    if (what.deleteSessions) await store.deleteSessionsOf(tx, { userId });
    return [...keyIds, ...sessionIds];
  }

  private async row(id: string): Promise<UserRow> {
    const row = await this.deps.store.findUser(autocommit, id);
    if (!row) throw new NotFound('User', id);
    return row;
  }
}
