import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { OidcConfig } from '../config.js';
import type { DatabaseHandle } from '../db/database.js';
import type { Clock } from '../kernel/clock.js';
import type { Notifier } from '../kernel/notifier.js';
import type { AuditTrail, EventLog } from '../kernel/ports.js';
import { OidcSignIn } from './oidc.js';
import { oidcRoutes } from './oidc-routes.js';
import { authRoutes } from './routes.js';
import { AuthService } from './service.js';
import { SessionService } from './sessions.js';
import { AuthStore } from './store.js';
import { userRoutes } from './user-routes.js';
import { UsersService } from './users.js';

export type { Principal } from './principal.js';
export { actingAgent, assertActsAs, auditActorOf, authorizeDeclared, actsForPlatform, credentialOf, type Declared } from './principal.js';
export { assertMayChange, type Changer } from './ownership.js';
export { authRetention, createAuthWorkers } from './workers.js';
export { isPermission, PERMISSIONS, ROLE_NAMES, ROLES, type Permission, type Requirement, type Role } from './permissions.js';
export { AuthService, type PendingSignature, type SignatureHeaders } from './service.js';
export { SessionService } from './sessions.js';
export { UsersService } from './users.js';
export { EMPTY_BODY_SHA256, signingString } from './signing.js';
export { httpAuthentication } from './http-authentication.js';

/**
 * The auth domain: keys and signatures (AuthService), people (UsersService) and the console's
 * sessions (SessionService), on one store. The CLI builds it too, without routes' options.
 */
export function createAuthDomain(deps: {
  database: DatabaseHandle;
  clock: Clock;
  notifier: Notifier;
  events: EventLog;
  audit: AuditTrail;
  sessionTtlMs: number;
  /** Session cookies get `Secure` (the public URL is https). */
  secureCookie: boolean;
  /** OIDC sign-in, when configured; its callback is under `publicUrl` (else the request's own origin). */
  oidc?: OidcConfig | null;
  publicUrl?: string | null;
}) {
  const { database, clock, notifier } = deps;
  const store = new AuthStore(database.db, database.caps);
  const service = new AuthService(store, clock, notifier, deps.events, deps.audit, database.dataVersion);
  const users = new UsersService({ store, clock, auth: service, audit: deps.audit });
  const sessions = new SessionService({
    store,
    clock,
    auth: service,
    notifier,
    dataVersion: database.dataVersion,
    ttlMs: deps.sessionTtlMs,
    audit: deps.audit,
  });
  const oidc = deps.oidc ? new OidcSignIn({ config: deps.oidc, store, users, sessions }) : null;
  const routes: FastifyPluginAsyncTypebox = async (app) => {
    await app.register(authRoutes(service));
    await app.register(userRoutes(users, sessions, { secureCookie: deps.secureCookie }));
    await app.register(oidcRoutes(oidc, { secureCookie: deps.secureCookie, publicUrl: deps.publicUrl ?? null }));
  };
  return {
    service,
    users,
    sessions,
    routes,
    close() {
      sessions.close();
      service.close();
    },
  };
}
