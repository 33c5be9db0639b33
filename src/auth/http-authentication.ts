import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Authenticator, AuthLimits } from '../http/authenticator.js';
import { pathWithQuery } from '../http/reply.js';
import { sessionCookie } from '../http/session-cookie.js';
import { Forbidden, RateLimited, ServiceUnavailable, Unauthorized } from '../kernel/errors.js';
import type { RateLimitDecision, RateLimiter } from '../kernel/rate-limiter.js';
import { sha256Hex } from '../kernel/sha256.js';
import type { Requirement } from './permissions.js';
import { auditActorOf, authorizeDeclared, type Principal } from './principal.js';
import type { AuthService, PendingSignature } from './service.js';
import type { SessionService } from './sessions.js';
import { EMPTY_BODY_SHA256 } from './signing.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller. Unset only on routes marked `config.public`. */
    principal: Principal;
    /** The raw JSON body, kept for request signatures. */
    rawBody?: Buffer;
    /** The raw body's sha256 when it was streamed (then rawBody is only part of it). */
    bodySha256?: string;
    /** Signature headers that passed the checks before the body; verified once the body has been read. */
    signedBy?: PendingSignature;
    /** The session token of the cookie that authenticated the request. */
    sessionToken?: string;
  }
  interface FastifyContextConfig {
    /** No credentials needed (health, webhooks, signed URLs): the path carries its own proof. */
    public?: boolean;
    /** false: not counted against any budget (health probes). */
    rateLimit?: boolean;
    /**
     * The route streams its body and checks it against `X-Content-SHA256` itself, so a
     * signature may cover that declared hash. Elsewhere a body that was not read as JSON is
     * signed as empty: an unchecked declaration would let a signature cover other bytes.
     */
    verifiesBodyHash?: boolean;
    /** What the caller needs (every route but the public ones declares it; server.ts checks). */
    permission?: Requirement;
    /** The path parameter naming an agent: that agent itself needs no `permission` (its own signing keys). */
    orSelf?: string;
    /**
     * Deciding a human step: an agent may lack `permission` when the step names it among its
     * approvers, which only the step can tell (the run engine checks it).
     */
    orNamedApprover?: boolean;
    /** A user may lack `permission` acting on what is theirs (their own keys), which the service checks. */
    orOwnUser?: boolean;
  }
}

/** Methods that change nothing: a request with the session cookie needs no CSRF token for them. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Authentication and rate limiting for every route: bearer keys, and the
 * console's session cookie where no other credentials are sent, are checked before the body is
 * read (a request with the cookie that changes state must carry the session's X-CSRF-Token); Ed25519 signatures cover the body's hash, so before the body only
 * what can be (a canonical signature, a fresh timestamp, a registered key), and the signature
 * after. Streamed bodies (multipart, raw uploads) are signed through the `X-Content-SHA256`
 * header, which the consuming route checks against the bytes it stores. A request with no
 * principal (a public route, or refused credentials) spends its client address's anonymous
 * budget, so every answer carries the budget headers.
 */
export function httpAuthentication(auth: AuthService, sessions: SessionService): Authenticator {
  return {
    install: (app, limits) => installAuth(app, auth, sessions, limits),
    actorOf: (request) => auditActorOf(request.principal),
  };
}

function installAuth(app: FastifyInstance, auth: AuthService, sessions: SessionService, limits: AuthLimits): void {
  app.decorateRequest('principal', null as unknown as Principal);

  function spend(limiter: RateLimiter, bucket: string, reply: FastifyReply): void | Promise<void> {
    if (!limiter.enabled) return;
    const decision = limiter.consume(bucket);
    if (decision instanceof Promise) return decision.then((d) => apply(d, reply));
    apply(decision, reply);
  }

  function apply(decision: RateLimitDecision, reply: FastifyReply): void {
    const resetSeconds = Math.ceil(decision.resetAt / 1000);
    reply.header('X-RateLimit-Limit', decision.limit);
    reply.header('X-RateLimit-Remaining', decision.remaining);
    reply.header('X-RateLimit-Reset', resetSeconds);
    if (!decision.allowed) throw new RateLimited(Math.max(1, resetSeconds - Math.floor(Date.now() / 1000)));
  }

  const spendAnonymous = (request: FastifyRequest, reply: FastifyReply) => spend(limits.anonymous, `ip:${request.ip}`, reply);

  /**
   * Ends a hook with `err`. A request refused before it had a principal spends the anonymous
   * budget first: its answer carries the budget headers, and a client guessing credentials is
   * held to that budget (429 once it is spent).
   */
  function refuse(request: FastifyRequest, reply: FastifyReply, err: unknown, done: HookHandlerDoneFunction): void {
    if (request.principal || request.routeOptions.config.public) return done(err as Error);
    let spent: void | Promise<void>;
    try {
      spent = spendAnonymous(request, reply);
    } catch (limited) {
      return done(limited as Error);
    }
    if (spent) spent.then(() => done(err as Error), done);
    else done(err as Error);
  }

  // Bytes reserved by the bodies of signed requests not verified yet: a client needs no secret
  // to get this far, so together they may hold at most `unauthenticatedBodyBytes`: 1,000 slow
  // 1 MiB bodies took RSS from 180 MB to 1.17 GB without it.
  let heldBodyBytes = 0;
  const releases = new WeakMap<FastifyRequest, () => void>();

  /** Reserves what the request's body may hold until its signature is verified or it ends; 503 over the cap. */
  function holdBody(request: FastifyRequest): void {
    const length = header(request, 'content-length');
    const declared = length !== undefined ? Number(length) : request.headers['transfer-encoding'] ? limits.bodyBytes : 0;
    const bytes = Math.min(declared, limits.bodyBytes);
    if (!(bytes > 0)) return;
    if (heldBodyBytes + bytes > limits.unauthenticatedBodyBytes) {
      throw new ServiceUnavailable('Too many signed request bodies are awaiting verification; retry in a moment', 1);
    }
    heldBodyBytes += bytes;
    let held = true;
    const release = () => {
      if (held) heldBodyBytes -= bytes;
      held = false;
    };
    releases.set(request, release);
    // Also when the client goes away before its body has arrived.
    request.raw.once('close', release);
  }

  function admit(request: FastifyRequest, reply: FastifyReply, principal: Principal): void | Promise<void> {
    request.principal = principal;
    const spent = spend(limits.principals, principal.bucket, reply);
    if (spent) return spent.then(() => authorizeRoute(request, principal));
    authorizeRoute(request, principal);
  }

  /** The route's declared permission, checked as soon as the caller is known (usually a Set lookup). */
  function authorizeRoute(request: FastifyRequest, principal: Principal): void {
    const { permission, orSelf, orNamedApprover, orOwnUser } = request.routeOptions.config;
    // Only public routes declare none (server.ts refuses to start otherwise), and they admit no principal.
    if (permission === undefined || permission === 'authenticated' || principal.permissions.has(permission)) return;
    const self = orSelf === undefined ? undefined : (request.params as Record<string, string>)[orSelf];
    authorizeDeclared(principal, { permission, self, orNamedApprover, orOwnUser });
  }

  /** Settles at once for a cached key and an in-memory limiter, the common case. */
  function authenticate(request: FastifyRequest, reply: FastifyReply): void | Promise<void> {
    const config = request.routeOptions.config;
    if (config.public) return config.rateLimit !== false ? spendAnonymous(request, reply) : undefined;
    const authorization = header(request, 'authorization');
    if (authorization !== undefined) {
      const match = /^Bearer +(\S+)$/i.exec(authorization);
      if (!match) throw new Unauthorized('Authorization must be "Bearer <API key>"');
      const principal = auth.authenticateKey(match[1]!);
      return principal instanceof Promise ? principal.then((p) => admit(request, reply, p)) : admit(request, reply, principal);
    }
    const agentId = header(request, 'x-agent-id');
    const timestamp = header(request, 'x-timestamp');
    const signature = header(request, 'x-signature');
    if (agentId !== undefined || timestamp !== undefined || signature !== undefined) {
      if (!agentId || !timestamp || !signature) {
        throw new Unauthorized('Signed requests need X-Agent-ID, X-Timestamp and X-Signature');
      }
      return auth.checkSignatureHeaders({ agentId, timestamp, signature }).then((pending) => {
        holdBody(request);
        request.signedBy = pending;
      });
    }
    const token = sessionCookie(request);
    if (token !== undefined) {
      // Browsers send the cookie with any request to this origin: one that changes state proves it
      // came from the console's page, which alone can read the CSRF token.
      const checked = (principal: Principal) => {
        if (!SAFE_METHODS.has(request.method) && !sessions.csrfMatches(token, header(request, 'x-csrf-token'))) {
          throw new Forbidden(
            "Missing or wrong X-CSRF-Token: a request with the session cookie that changes state must send the session's CSRF token",
          );
        }
        request.sessionToken = token;
        return admit(request, reply, principal);
      };
      const principal = sessions.authenticate(token);
      return principal instanceof Promise ? principal.then(checked) : checked(principal);
    }
    throw new Unauthorized('Missing credentials: send "Authorization: Bearer <API key>", sign the request, or sign in (session cookie)');
  }

  // A callback hook, so that a request settled at once costs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    let pending: void | Promise<void>;
    try {
      pending = authenticate(request, reply);
    } catch (err) {
      return refuse(request, reply, err, done);
    }
    if (pending)
      pending.then(
        () => done(),
        (err: unknown) => refuse(request, reply, err, done),
      );
    else done();
  });

  async function verifySignature(request: FastifyRequest, reply: FastifyReply, pending: PendingSignature) {
    const declared = request.routeOptions.config.verifiesBodyHash ? header(request, 'x-content-sha256') : undefined;
    const bodySha256 =
      request.bodySha256 ?? (request.rawBody ? sha256Hex(request.rawBody) : (declared?.toLowerCase() ?? EMPTY_BODY_SHA256));
    try {
      const principal = await auth.verifySignature(pending, { method: request.method, pathWithQuery: pathWithQuery(request), bodySha256 });
      await admit(request, reply, principal);
    } finally {
      releases.get(request)?.();
    }
  }

  // A callback hook: most requests carry no signature, and skip it without a promise.
  app.addHook('preValidation', (request, reply, done) => {
    const pending = request.signedBy;
    if (!pending) return done();
    verifySignature(request, reply, pending).then(
      () => done(),
      (err: unknown) => refuse(request, reply, err, done),
    );
  });
}
