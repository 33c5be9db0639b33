import type { DatabaseHandle } from '../db/database.js';
import type { Clock } from '../kernel/clock.js';
import type { Notifier } from '../kernel/notifier.js';
import type { AuditTrail, EventLog } from '../kernel/ports.js';
import { authRoutes } from './routes.js';
import { AuthService } from './service.js';
import { AuthStore } from './store.js';

export type { Principal } from './principal.js';
export { actingAgent, assertActsAs, authorizeDeclared, actsForPlatform, type Declared } from './principal.js';
export { CredentialWatch } from './credential-watch.js';
export { isPermission, PERMISSIONS, ROLE_NAMES, ROLES, type Permission, type Requirement, type Role } from './permissions.js';
export { AuthService, type PendingSignature, type SignatureHeaders } from './service.js';
export { EMPTY_BODY_SHA256, signingString } from './signing.js';

export function createAuthDomain(deps: { database: DatabaseHandle; clock: Clock; notifier: Notifier; events: EventLog; audit: AuditTrail }) {
  const { database } = deps;
  const service = new AuthService(new AuthStore(database.db, database.caps), deps.clock, deps.notifier, deps.events, deps.audit, database.dataVersion);
  return { service, routes: authRoutes(service) };
}
