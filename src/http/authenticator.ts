import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RateLimiter } from '../kernel/rate-limiter.js';
import type { AuditActor } from '../kernel/request-scope.js';

export interface AuthLimits {
  /** Budgets of authenticated principals. */
  principals: RateLimiter;
  /** Budgets of requests without a principal (public routes, refused credentials), per client address. */
  anonymous: RateLimiter;
  /** The most bytes one request body may have (Fastify's body limit). */
  bodyBytes: number;
  /** The most bytes the bodies of signed requests awaiting verification may hold together. */
  unauthenticatedBodyBytes: number;
}

/**
 * Who calls, as far as the HTTP layer needs to know: the identity domain installs its hooks
 * (credentials, sessions, signatures, budgets, each route's declared permission) and names a
 * request's actor. The route options it checks (`config.permission`, `config.public`, …) are
 * declared by its implementation (auth/http-authentication.ts), so http/ imports no domain.
 */
export interface Authenticator {
  install(app: FastifyInstance, limits: AuthLimits): void;
  /** Who the request is, for the audit and access logs: `anonymous` before or without credentials. */
  actorOf(request: FastifyRequest): AuditActor;
}
