import type { DatabaseHandle } from '../db/database.js';
import type { Clock } from '../kernel/clock.js';
import type { Notifier } from '../kernel/notifier.js';
import type { Platform } from '../platform.js';
import type { AgentGroups, EventLog, RetentionRule } from '../kernel/ports.js';
import { EventAppender } from './appender.js';
import { eventsRoutes } from './routes.js';
import { EventsService } from './service.js';
import { EventsStore } from './store.js';

export { EVENTS_APPENDED } from './appender.js';
export { EventsService, eventId, eventTypesMatching } from './service.js';
export * as eventSchemas from './schemas.js';
export type { Event } from './schemas.js';

/** The log when a benchmark turns it off (SWITCHBOARD_BENCH_EVENT_LOG=off). */
const UNLOGGED: EventLog = { append: async () => undefined };

/**
 * The event log: the EventLog every domain appends to in its own
 * transactions, its list and live stream, and its retention rule (events older than
 * SWITCHBOARD_EVENT_RETENTION_DAYS, oldest first).
 */
export function createEventsDomain(deps: { platform: Platform; groups: AgentGroups }) {
  const { platform } = deps;
  const { config } = platform;
  const store = new EventsStore(platform.database.db, platform.database.caps);
  const log: EventLog = config.eventLogEnabled
    ? new EventAppender({ store, clock: platform.clock, notifier: platform.notifier })
    : UNLOGGED;
  const service = new EventsService({
    store,
    clock: platform.clock,
    notifier: platform.notifier,
    groups: deps.groups,
    retentionDays: config.eventRetentionDays,
    streamsPerPrincipal: config.eventStreamsPerPrincipal,
    keepAliveMs: config.eventKeepAliveMs,
  });
  const retention: RetentionRule = {
    name: 'events',
    async deleteExpired(now, limit) {
      const batch = await service.deleteExpired(now, limit);
      return { deleted: { events: batch.deleted }, more: batch.more };
    },
  };
  return {
    log,
    service,
    routes: eventsRoutes(service, {
      shutdown: platform.shutdown,
      connections: platform.connections,
      stalledClientMs: config.stalledClientMs,
    }),
    retention: [retention],
  };
}

/** The log alone, for a process that only appends (the CLI). */
export function createEventLog(database: DatabaseHandle, clock: Clock, notifier: Notifier): EventLog {
  return new EventAppender({ store: new EventsStore(database.db, database.caps), clock, notifier });
}
