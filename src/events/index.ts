import type { Platform } from '../kernel/platform.js';
import type { AgentGroups } from '../kernel/ports.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { eventsRoutes } from './routes.js';
import { EventsService } from './service.js';
import { EventsStore } from './store.js';

export { EventsService, EVENTS_APPENDED, eventId } from './service.js';
export * as eventSchemas from './schemas.js';
export type { Event } from './schemas.js';

/** How often the retention sweep runs. */
const SWEEP_INTERVAL_MS = 60 * 60_000;

/**
 * The event log (design §8, issue 22): the EventLog every domain appends to in its own
 * transactions, its list and live stream, and the retention sweep.
 */
export function createEventsDomain(deps: { platform: Platform; groups: AgentGroups }) {
  const { platform } = deps;
  const { config } = platform;
  const service = new EventsService({
    store: new EventsStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    notifier: platform.notifier,
    groups: deps.groups,
    retentionDays: config.eventRetentionDays,
    streamsPerPrincipal: config.eventStreamsPerPrincipal,
    keepAliveMs: config.eventKeepAliveMs,
  });
  const sweeper = new LoopWorker({
    name: 'event-retention',
    intervalMs: SWEEP_INTERVAL_MS,
    logger: platform.logger,
    run: async () => {
      const removed = await service.sweep();
      if (removed > 0) platform.logger.info({ removed }, 'removed expired events');
    },
  });
  return { service, routes: eventsRoutes(service, platform.shutdown), workers: [sweeper] };
}
