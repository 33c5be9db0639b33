import type { DatabaseHandle } from '../../db/database.js';
import type { Clock } from '../../kernel/clock.js';
import type { AuditTrail } from '../../kernel/ports.js';
import { accessGroupRoutes } from './routes.js';
import { AccessGroupsService } from './service.js';
import { AccessGroupsStore } from './store.js';

export { AccessGroupsService } from './service.js';
export * as accessGroupSchemas from './schemas.js';

/**
 * Access groups: the memberships an admin grants (`/auth/groups`), which decide who reads what
 * is shared with a group. Built before the domains that read them (artifacts, events).
 */
export function createAccessGroups(deps: { database: DatabaseHandle; clock: Clock; audit: AuditTrail }) {
  const service = new AccessGroupsService({
    store: new AccessGroupsStore(deps.database.db, deps.database.caps),
    clock: deps.clock,
    audit: deps.audit,
  });
  return { service, routes: accessGroupRoutes(service) };
}
