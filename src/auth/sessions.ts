import { timingSafeEqual } from 'node:crypto';
import { autocommit } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import { AppError, InvalidRequest, RateLimited, Unauthorized } from '../kernel/errors.js';
import { currentScope } from '../kernel/request-scope.js';
import { newId, newSecret } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import type { AuditTrail } from '../kernel/ports.js';
import { sha256Hex } from '../kernel/sha256.js';
import { CredentialCache } from './credential-cache.js';
import { verifyNothing, verifyPassword } from './passwords.js';
import { ROLES } from './permissions.js';
import { auditActorOf, type Principal } from './principal.js';
import { principalOfUser, userRefusal, type AuthService } from './service.js';
import type { AuthStore, SessionRow, UserRow } from './store.js';

const TOKEN_PREFIX = 'sbs_';
/** Wrong passwords (or API keys) per username and client address before sign-in answers 429. */
export const SIGN_IN_FAILURES_ALLOWED = 5;
export const SIGN_IN_FAILURE_WINDOW_MS = 15 * 60_000;
/** The same answer whether the user is unknown, has no password, is disabled or the password is wrong. */
const WRONG_PASSWORD = 'Wrong username or password';

export interface SignInInput {
  username?: string;
  password?: string;
  api_key?: string;
}

/** A new session: `token` goes into the cookie and nowhere else; `csrfToken` to the client. */
export interface SignedIn {
  token: string;
  csrfToken: string;
  principal: Principal;
}

interface CachedSession {
  /** The principal without its session. */
  principal: Principal;
  sessionId: string;
  /** The expiry as stored (this node's last write or read of it). */
  expiresAt: number;
  /** The expiry of the API key a session was exchanged from. */
  keyExpiresAt: number | null;
}

function sessionOf(principal: Principal): NonNullable<Principal['session']> {
  if (principal.session === null)
    throw new AppError(
      'not_found',
      'This request carried no session cookie (it was made with an API key or a signature): there is no session',
    );
  return principal.session;
}

/**
 * The console's sessions: sign-in with a username and password or with an API key,
 * the session token in an HttpOnly cookie (routes), only its hash stored. Sessions slide: each
 * use moves the expiry to now + TTL, written only once it moved by a minute (a tenth of the TTL
 * when that is shorter), so a busy console writes once a minute, not per request. Expired rows
 * are refused at once and deleted by the retention worker (`deleteExpired`).
 *
 * Wrong passwords are throttled per username and client address (rows in `sign_in_failures`,
 * shared by every node): the sixth within 15 minutes answers 429 with Retry-After. An unknown
 * user costs a scrypt like a known one, and gets the same answer.
 *
 * What sign-in, sign-out and refused sign-ins did is what these methods return or throw (the
 * seam for an audit log).
 */
export class SessionService {
  private readonly cache: CredentialCache<CachedSession>;
  private readonly slideStepMs: number;
  private readonly stopListening: () => void;

  constructor(
    private readonly deps: {
      store: AuthStore;
      clock: Clock;
      auth: AuthService;
      notifier: Notifier;
      /** SQLite's data version of the file (see CredentialCache); null on PostgreSQL. */
      dataVersion: (() => number) | null;
      ttlMs: number;
      audit: AuditTrail;
    },
  ) {
    this.cache = new CredentialCache(deps.notifier, deps.dataVersion);
    this.slideStepMs = Math.min(60_000, deps.ttlMs / 10);
    this.stopListening = deps.auth.onRevoked((credential) => this.cache.forget(credential));
  }

  close(): void {
    this.stopListening();
    this.cache.clear();
  }

  /** The CSRF token of a session: derived from its token, so nothing more is stored, and it tells nothing of the token. */
  csrfTokenOf(token: string): string {
    return sha256Hex(`csrf\n${token}`);
  }

  /** Whether `presented` is the session's CSRF token, compared in constant time. */
  csrfMatches(token: string, presented: string | undefined): boolean {
    const expected = Buffer.from(this.csrfTokenOf(token));
    return presented !== undefined && presented.length === expected.length && timingSafeEqual(Buffer.from(presented), expected);
  }

  /** Opens a session for a username and password, or for an API key; `clientAddress` throttles failures. */
  async signIn(input: SignInInput, clientAddress: string): Promise<SignedIn> {
    const byKey = input.api_key !== undefined;
    if (byKey === (input.username !== undefined || input.password !== undefined)) {
      throw new InvalidRequest('Send either username and password, or api_key', [
        { field: 'body', message: 'needs username and password, or api_key' },
      ]);
    }
    if (!byKey && (input.username === undefined || input.password === undefined)) {
      throw InvalidRequest.field(input.username === undefined ? 'username' : 'password', 'is required with a password sign-in');
    }
    const bucket = sha256Hex(byKey ? `api_key\n${clientAddress}` : `password\n${input.username}\n${clientAddress}`);
    await this.checkThrottle(bucket);
    let principal: Principal;
    try {
      principal = byKey ? await this.deps.auth.authenticateKey(input.api_key!) : await this.checkPassword(input.username!, input.password!);
    } catch (err) {
      if (err instanceof Unauthorized) await this.deps.store.recordSignInFailure(autocommit, bucket, this.deps.clock.now());
      throw err;
    }
    await this.deps.store.clearSignInFailures(autocommit, bucket);
    return this.open(principal);
  }

  private async checkThrottle(bucket: string): Promise<void> {
    const now = this.deps.clock.now();
    const { count, oldest } = await this.deps.store.signInFailures(autocommit, bucket, now - SIGN_IN_FAILURE_WINDOW_MS);
    if (count < SIGN_IN_FAILURES_ALLOWED || oldest === null) return;
    const retryAfter = Math.max(1, Math.ceil((oldest + SIGN_IN_FAILURE_WINDOW_MS - now) / 1000));
    // Someone guessing passwords: the audit log hears of it like of the failures before.
    currentScope()?.denied?.('session.create', 429);
    throw new RateLimited(retryAfter, `Too many failed sign-ins for this username from this address; retry in ${retryAfter} s`);
  }

  /** Opens a session for a user another way has vouched for (OIDC sign-in); 401 when the user is disabled. */
  async openForUser(user: UserRow): Promise<SignedIn> {
    const refusal = userRefusal(user);
    if (refusal !== null) throw new Unauthorized(refusal);
    return this.open(principalOfUser(user, new Set(ROLES[user.role]), null));
  }

  private async checkPassword(username: string, password: string): Promise<Principal> {
    const user = await this.deps.store.findUserByName(autocommit, username);
    const matches = user?.password_hash ? await verifyPassword(password, user.password_hash) : await verifyNothing(password);
    if (!matches || userRefusal(user) !== null) throw new Unauthorized(WRONG_PASSWORD);
    return principalOfUser(user!, new Set(ROLES[user!.role]), null);
  }

  private async open(principal: Principal): Promise<SignedIn> {
    const now = this.deps.clock.now();
    const token = newSecret(TOKEN_PREFIX);
    const row: SessionRow = {
      id: newId('sess', now),
      token_hash: sha256Hex(token),
      user_id: principal.user?.id ?? null,
      key_id: principal.keyId,
      created_at: now,
      expires_at: now + this.deps.ttlMs,
    };
    await this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, {
        action: 'session.create',
        resource: { type: 'session', id: row.id },
        actor: auditActorOf(principal),
      });
      await this.deps.store.insertSession(tx, row);
    });
    return { token, csrfToken: this.csrfTokenOf(token), principal: { ...principal, session: { id: row.id, expiresAt: row.expires_at } } };
  }

  /**
   * The principal of a session token (the cookie), or 401. A session seen before resolves at
   * once from the cache (see CredentialCache), unless its expiry as this node knows it passed:
   * then it is read again, since another node may have moved it.
   */
  authenticate(token: string): Principal | Promise<Principal> {
    if (!token.startsWith(TOKEN_PREFIX) || token.length > 200) throw new Unauthorized('Malformed session cookie');
    const hash = sha256Hex(token);
    const cached = this.cache.get(hash);
    if (cached && this.deps.clock.now() < cached.expiresAt) return this.admit(cached);
    return this.lookUp(hash);
  }

  private async lookUp(hash: string): Promise<Principal> {
    const { store, clock, auth } = this.deps;
    const stamp = this.cache.stamp();
    const row = await store.findSessionByHash(autocommit, hash);
    if (!row || clock.now() >= row.expires_at) throw new Unauthorized('Session expired or signed out: sign in again');
    let principal: Principal;
    let keyExpiresAt: number | null = null;
    if (row.key_id !== null) {
      const key = await store.findKey(autocommit, row.key_id);
      if (!key || key.revoked_at !== null) throw new Unauthorized('The API key of this session has been revoked');
      principal = await auth.keyPrincipal(key);
      keyExpiresAt = key.expires_at;
    } else {
      const user = await store.findUser(autocommit, row.user_id!);
      const refusal = userRefusal(user);
      if (refusal !== null) throw new Unauthorized(refusal);
      principal = principalOfUser(user!, new Set(ROLES[user!.role]), null);
    }
    const entry: CachedSession = { principal, sessionId: row.id, expiresAt: row.expires_at, keyExpiresAt };
    const credentials = [row.id, ...(row.key_id !== null ? [row.key_id] : []), ...(row.user_id !== null ? [row.user_id] : [])];
    this.cache.set(hash, entry, credentials, stamp);
    return this.admit(entry);
  }

  /** Slides the session's expiry; the write happens once it moved by `slideStepMs` (not awaited: a failure is retried on a later request). */
  private admit(entry: CachedSession): Principal {
    const now = this.deps.clock.now();
    if (entry.keyExpiresAt !== null && now >= entry.keyExpiresAt) throw new Unauthorized('The API key of this session has expired');
    const slid = now + this.deps.ttlMs;
    if (slid - entry.expiresAt >= this.slideStepMs) {
      const previous = entry.expiresAt;
      entry.expiresAt = slid;
      this.deps.store.extendSession(autocommit, entry.sessionId, slid).catch(() => {
        if (entry.expiresAt === slid) entry.expiresAt = previous;
      });
    }
    return { ...entry.principal, session: { id: entry.sessionId, expiresAt: entry.expiresAt } };
  }

  /** The request's session and its CSRF token; 404 when the request came without one. */
  current(principal: Principal, token: string | undefined): { id: string; csrfToken: string } {
    const session = sessionOf(principal);
    return { id: session.id, csrfToken: this.csrfTokenOf(token!) };
  }

  /** Ends the caller's session (sign-out) on every node; 404 when the request came without one. */
  async signOut(principal: Principal): Promise<{ id: string }> {
    const session = sessionOf(principal);
    await this.deps.auth.endingCredentials(async (tx, end) => {
      await this.deps.audit.record(tx, { action: 'session.delete', resource: { type: 'session', id: session.id } });
      await this.deps.store.deleteSession(tx, session.id);
      await end([session.id]);
    });
    return { id: session.id };
  }

  /**
   * Retention: deletes up to `limit` sessions expired at `now`, and the throttling rows past
   * their window (few: sign-in attempts are throttled); answers how many of each.
   */
  async deleteExpired(now: number, limit: number): Promise<{ sessions: number; failures: number }> {
    const sessions = await this.deps.store.deleteSessionsExpiredBy(autocommit, now, limit);
    const failures = await this.deps.store.forgetSignInFailuresBefore(autocommit, now - SIGN_IN_FAILURE_WINDOW_MS);
    return { sessions, failures };
  }
}
