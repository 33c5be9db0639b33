import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthService, Principal, SignatureHeaders } from '../../auth/index.js';
import { EMPTY_BODY_SHA256 } from '../../auth/index.js';
import { RateLimited, Unauthorized } from '../../kernel/errors.js';
import { sha256Hex } from '../../kernel/sha256.js';
import type { RateLimitDecision, RateLimiter } from '../../kernel/rate-limiter.js';
import { pathWithQuery } from '../reply.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller. Unset only on routes marked `config.public`. */
    principal: Principal;
    /** The raw JSON body, kept for request signatures. */
    rawBody?: Buffer;
    /** Signature headers awaiting verification once the body has been read. */
    signedBy?: SignatureHeaders;
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
  }
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Authentication and rate limiting for every route (design §3, issue "rate limiting"):
 * bearer keys are checked before the body is read; Ed25519 signatures after, because they
 * cover the body's hash. Streamed bodies (multipart, raw uploads) are signed through the
 * `X-Content-SHA256` header, which the consuming route checks against the bytes it stores.
 */
export function installAuth(app: FastifyInstance, auth: AuthService, limiter: RateLimiter): void {
  app.decorateRequest('principal', null as unknown as Principal);

  function spend(bucket: string, reply: FastifyReply): void | Promise<void> {
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

  /** Settles at once for a cached key and an in-memory limiter, the common case. */
  function authenticate(request: FastifyRequest, reply: FastifyReply): void | Promise<void> {
    const config = request.routeOptions.config;
    if (config.public) return config.rateLimit !== false ? spend(`ip:${request.ip}`, reply) : undefined;
    const authorization = header(request, 'authorization');
    if (authorization !== undefined) {
      const match = /^Bearer +(\S+)$/i.exec(authorization);
      if (!match) throw new Unauthorized('Authorization must be "Bearer <API key>"');
      const admit = (principal: Principal) => {
        request.principal = principal;
        return spend(principal.bucket, reply);
      };
      const principal = auth.authenticateKey(match[1]!);
      return principal instanceof Promise ? principal.then(admit) : admit(principal);
    }
    const agentId = header(request, 'x-agent-id');
    const timestamp = header(request, 'x-timestamp');
    const signature = header(request, 'x-signature');
    if (agentId !== undefined || timestamp !== undefined || signature !== undefined) {
      if (!agentId || !timestamp || !signature) {
        throw new Unauthorized('Signed requests need X-Agent-ID, X-Timestamp and X-Signature');
      }
      request.signedBy = { agentId, timestamp, signature };
      return;
    }
    throw new Unauthorized('Missing credentials: send "Authorization: Bearer <API key>" or sign the request');
  }

  // A callback hook, so that a request settled at once costs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    let pending: void | Promise<void>;
    try {
      pending = authenticate(request, reply);
    } catch (err) {
      return done(err as Error);
    }
    if (pending) pending.then(() => done(), done);
    else done();
  });

  async function verifySignature(request: FastifyRequest, reply: FastifyReply, signed: NonNullable<FastifyRequest['signedBy']>) {
    const declared = request.routeOptions.config.verifiesBodyHash ? header(request, 'x-content-sha256') : undefined;
    const bodySha256 = request.rawBody ? sha256Hex(request.rawBody) : (declared?.toLowerCase() ?? EMPTY_BODY_SHA256);
    const pending = await auth.checkSignatureHeaders(signed);
    request.principal = await auth.verifySignature(pending, { method: request.method, pathWithQuery: pathWithQuery(request), bodySha256 });
    await spend(request.principal.bucket, reply);
  }

  // A callback hook: most requests carry no signature, and skip it without a promise.
  app.addHook('preValidation', (request, reply, done) => {
    const signed = request.signedBy;
    if (!signed) return done();
    verifySignature(request, reply, signed).then(() => done(), done);
  });
}
