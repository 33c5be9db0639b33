import * as oidc from 'openid-client';
import type { OidcConfig } from '../config.js';
import { autocommit } from '../kernel/tx.js';
import { randomBytes } from 'node:crypto';
import { Conflict, InvalidRequest, ServiceUnavailable, Unauthorized } from '../kernel/errors.js';
import { PERMISSION_NAMES } from './permissions.js';
import { USERNAME_PATTERN } from './schemas.js';
import type { SessionService, SignedIn } from './sessions.js';
import type { AuthStore, UserRow } from './store.js';
import type { UserRole, UsersService } from './users.js';

/** Most privileged first: a role claim that lists several gives the first of these it names. */
const ROLES_BY_RANK: readonly UserRole[] = ['admin', 'operator', 'approver', 'viewer'];
/** OIDC sign-in creates users as the platform itself, which may give any role. */
const PLATFORM = { permissions: new Set(PERMISSION_NAMES) };
const USERNAME = new RegExp(USERNAME_PATTERN);
/** Where a sign-in returns when it was given nowhere (or somewhere outside the console). */
export const CONSOLE_HOME = '/console';

/**
 * What a sign-in started by this browser must match when the provider sends it back: kept in
 * the browser (an HttpOnly cookie) rather than on the server, so that the callback is tied to
 * the browser that started it (a callback URL sent to someone else fails its state check), and
 * any node can finish it.
 */
export interface OidcFlow {
  state: string;
  nonce: string;
  /** The PKCE code verifier, whose S256 challenge went to the provider. */
  verifier: string;
  redirectUri: string;
  /** The console path to return to. */
  returnTo: string;
}

export function encodeFlow(flow: OidcFlow): string {
  return Buffer.from(JSON.stringify(flow)).toString('base64url');
}

/** The flow a cookie carries, or 400 when it is missing or not one (a stale or foreign callback). */
export function decodeFlow(text: string | undefined): OidcFlow {
  const refused = () =>
    new InvalidRequest('No sign-in was started in this browser (or it took longer than 10 minutes): start again from the sign-in page');
  if (text === undefined) throw refused();
  let flow: Partial<OidcFlow>;
  try {
    flow = JSON.parse(Buffer.from(text, 'base64url').toString()) as Partial<OidcFlow>;
  } catch {
    throw refused();
  }
  const fields = [flow.state, flow.nonce, flow.verifier, flow.redirectUri, flow.returnTo];
  if (fields.some((field) => typeof field !== 'string')) throw refused();
  return flow as OidcFlow;
}

/** A console path to come back to: a path of the console on this server, else its home (no open redirect). */
export function consolePath(requested: string | undefined): string {
  if (requested === undefined || !/^\/console(\/|\?|$)/.test(requested) || requested.includes('\\')) return CONSOLE_HOME;
  return requested;
}

/**
 * OIDC sign-in: the authorization code flow with PKCE (S256), state and nonce,
 * through openid-client. The provider's discovery document is read at the first sign-in (and
 * again after a failed read). The user is found by issuer and `sub`, or created with a
 * username from `preferred_username` or `email`; the role comes from the role claim when it
 * names one (at every sign-in: the provider governs it), else a new user gets the default role.
 */
export class OidcSignIn {
  private discovered: Promise<oidc.Configuration> | null = null;

  constructor(
    private readonly deps: {
      config: OidcConfig;
      store: AuthStore;
      users: UsersService;
      sessions: SessionService;
    },
  ) {}

  get providerName(): string {
    return this.deps.config.name;
  }

  private configuration(): Promise<oidc.Configuration> {
    const { issuer, clientId, clientSecret } = this.deps.config;
    this.discovered ??= oidc
      .discovery(new URL(issuer), clientId, undefined, clientSecret === null ? oidc.None() : oidc.ClientSecretBasic(clientSecret), {
        // Config admits http only for a provider on a loopback address.
        ...(issuer.startsWith('http:') ? { execute: [oidc.allowInsecureRequests] } : {}),
      })
      .catch((err: unknown) => {
        this.discovered = null;
        throw new ServiceUnavailable(
          `The OIDC provider's discovery document could not be read (${(err as Error).message}): try again later`,
        );
      });
    return this.discovered;
  }

  /** The provider's authorization URL to send the browser to, and the flow to keep in it. */
  async start(redirectUri: string, returnTo: string | undefined): Promise<{ url: string; flow: OidcFlow }> {
    const configuration = await this.configuration();
    const flow: OidcFlow = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      redirectUri,
      returnTo: consolePath(returnTo),
    };
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: 'openid profile email',
      state: flow.state,
      nonce: flow.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, flow };
  }

  /**
   * Finishes the sign-in the provider sent back (`query`: the callback's query string): checks
   * state, exchanges the code with the verifier, checks the ID token and its nonce, then opens a
   * session for the user. Whatever the provider or the browser got wrong → 401.
   */
  async finish(query: string, flow: OidcFlow): Promise<SignedIn> {
    const configuration = await this.configuration();
    const callback = new URL(flow.redirectUri);
    callback.search = query;
    let claims: Record<string, unknown>;
    try {
      const tokens = await oidc.authorizationCodeGrant(configuration, callback, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      claims = { ...tokens.claims()! };
      // Many providers put profile and custom claims (the role) in the userinfo answer only.
      if (configuration.serverMetadata().userinfo_endpoint !== undefined) {
        claims = { ...(await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub as string)), ...claims };
      }
    } catch (err) {
      throw new Unauthorized(`The OIDC sign-in was refused: ${(err as Error).message}`);
    }
    const user = await this.userOf(String(claims.iss), String(claims.sub), claims);
    return this.deps.sessions.openForUser(user);
  }

  /** The user of this identity: found (its role brought in line with the claim), or created. */
  private async userOf(issuer: string, subject: string, claims: Record<string, unknown>): Promise<UserRow> {
    const { store, users, config } = this.deps;
    const claimed = this.claimedRole(claims);
    const known = await store.findUserByOidc(autocommit, issuer, subject);
    if (known) {
      if (claimed !== null && claimed !== known.role && known.disabled_at === null)
        await users.update(known.id, { role: claimed }, PLATFORM);
      return (await store.findUser(autocommit, known.id)) ?? known;
    }
    const displayName = typeof claims.name === 'string' ? claims.name.slice(0, 200) : undefined;
    for (const username of usernamesFor(claims, subject)) {
      try {
        const created = await users.create(
          { username, role: claimed ?? config.defaultRole, ...(displayName ? { display_name: displayName } : {}) },
          PLATFORM,
          { issuer, subject },
        );
        return (await store.findUser(autocommit, created.id))!;
      } catch (err) {
        if (!(err instanceof Conflict)) throw err;
        // The name is someone else's (try the next), or a sign-in in parallel just created this identity.
        const raced = await store.findUserByOidc(autocommit, issuer, subject);
        if (raced) return raced;
      }
    }
    throw new Conflict('No free username for this OIDC user: an admin may create it first');
  }

  /** The role the role claim names (a role, or a list: the most privileged), or null. */
  private claimedRole(claims: Record<string, unknown>): UserRole | null {
    const { roleClaim } = this.deps.config;
    if (roleClaim === null) return null;
    const value = claims[roleClaim];
    const named = new Set((Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string'));
    return ROLES_BY_RANK.find((role) => named.has(role)) ?? null;
  }
}

/**
 * Usernames to try for a new OIDC user: from `preferred_username`, `email` or the `sub`, made to
 * fit the pattern (lower case, allowed characters, 64 at most), then with -2 … -4, then a random one.
 */
function usernamesFor(claims: Record<string, unknown>, subject: string): string[] {
  const random = `oidc-${randomBytes(6).toString('hex')}`;
  const base = [claims.preferred_username, claims.email, `oidc-${subject}`]
    .filter((claim): claim is string => typeof claim === 'string')
    .map((claim) =>
      claim
        .toLowerCase()
        .replace(/[^a-z0-9._@-]+/g, '-')
        .replace(/^[^a-z0-9]+/, '')
        .slice(0, 61),
    )
    .find((name) => USERNAME.test(name));
  return base === undefined ? [random] : [base, `${base}-2`, `${base}-3`, `${base}-4`, random];
}
