import type { Db } from '../db/database.js';
import type { Clock } from '../kernel/clock.js';
import type { Notifier } from '../kernel/notifier.js';
import { authRoutes } from './routes.js';
import { AuthService } from './service.js';
import { AuthStore } from './store.js';

export type { Principal } from './principal.js';
export { actingAgent, assertActsAs, isAdmin, requireAdmin } from './principal.js';
export { AuthService, type PendingSignature, type SignatureHeaders } from './service.js';
export { EMPTY_BODY_SHA256, signingString } from './signing.js';

export function createAuthDomain(deps: { db: Db; clock: Clock; notifier: Notifier }) {
  const service = new AuthService(new AuthStore(deps.db), deps.clock, deps.notifier);
  return { service, routes: authRoutes(service) };
}
