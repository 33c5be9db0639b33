import type { Platform } from '../platform.js';
import type { EventLog, InboxReadings, NodeRegistry, NotificationChannels } from '../kernel/ports.js';
import type { BudgetReadings } from '../kernel/usage-ports.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { ConditionReader } from './conditions.js';
import { AlertEvaluator } from './evaluator.js';
import { alertsRoutes } from './routes.js';
import { AlertsService } from './service.js';
import { SignalsStore } from './signals-store.js';
import { AlertsStore } from './store.js';

export { AlertsService } from './service.js';
export * as alertSchemas from './schemas.js';

/**
 * Alert rules over what happens (a closed set of conditions), evaluated by the
 * `alert-evaluator` worker on the cluster's leader; each firing and resolution is told once to
 * the rule's notification channels and logged as `alert.fired` / `alert.resolved`.
 */
export function createAlertsDomain(deps: {
  platform: Platform;
  channels: NotificationChannels;
  events: EventLog;
  nodes: NodeRegistry;
  budgets: BudgetReadings;
  inboxes: InboxReadings;
}) {
  const { platform } = deps;
  const { db, caps } = platform.database;
  const store = new AlertsStore(db, caps);
  const reader = new ConditionReader(new SignalsStore(db, caps), deps, platform.config.healthTtlSeconds * 1000);
  const service = new AlertsService({ store, clock: platform.clock, audit: platform.audit, channels: deps.channels, reader });
  const evaluator = new AlertEvaluator({
    store,
    reader,
    clock: platform.clock,
    channels: deps.channels,
    events: deps.events,
    nodes: deps.nodes,
    publicUrl: platform.publicUrl,
    logger: platform.logger,
  });
  const worker = new LoopWorker({
    name: 'alert-evaluator',
    intervalMs: platform.config.alertIntervalMs,
    logger: platform.logger,
    run: () => evaluator.pass(),
  });
  return { service, routes: alertsRoutes(service), workers: [worker] };
}
