import type { EventLog, InboxWaker } from '../kernel/ports.js';
import type { Platform } from '../platform.js';
import { BudgetsService } from './budgets.js';
import { BudgetsStore } from './budgets-store.js';
import { budgetRoutes, usageRoutes } from './routes.js';
import { usageRollupMerge } from './retention.js';
import { UsageService } from './service.js';
import { UsageStore } from './store.js';

export { UsageService } from './service.js';
export { UsageReport } from './schemas.js';

/**
 * Usage: what agents report their work consumed, linked to runs and steps, its totals, and the
 * budgets it counts against (which pause agents: `budgets` is the AgentPauses port).
 */
export function createUsageDomain(deps: { platform: Platform; events: EventLog; inboxes: InboxWaker }) {
  const { platform } = deps;
  const { db, caps } = platform.database;
  const budgets = new BudgetsService({
    store: new BudgetsStore(db, caps),
    clock: platform.clock,
    events: deps.events,
    audit: platform.audit,
    inboxes: deps.inboxes,
    notifier: platform.notifier,
    dataVersion: platform.database.dataVersion,
  });
  const store = new UsageStore(db, caps);
  const service = new UsageService({ store, clock: platform.clock, metrics: platform.metrics, budgets });
  return { service, budgets, routes: usageRoutes(service), budgetRoutes: budgetRoutes(budgets), retention: [usageRollupMerge(store)] };
}
