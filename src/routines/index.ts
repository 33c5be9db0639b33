import type { Platform } from '../platform.js';
import type { EventLog, Inbox, OutcomeHandler } from '../kernel/ports.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { routinesRoutes } from './routes.js';
import { ROUTINES_CHANGED, RoutinesService } from './service.js';
import { RoutinesStore } from './store.js';
import { DebounceStore } from '../debounce/store.js';
import { autocommit } from '../kernel/tx.js';
import type { RetentionRule } from '../kernel/ports.js';

export { RoutinesService } from './service.js';
export type { Execution, Routine } from './schemas.js';
export * as routineSchemas from './schemas.js';

/** The scheduler sleeps at most this long, so a lost wake-up costs at most a minute. */
const MAX_SLEEP_MS = 60_000;
const DAY_MS = 86_400_000;

export function createRoutinesDomain(deps: { platform: Platform; inbox: Inbox; events: EventLog }) {
  const { platform } = deps;
  const store = new RoutinesStore(platform.database.db, platform.database.caps);
  const service = new RoutinesService({
    store,
    debounces: new DebounceStore(platform.database.db, platform.database.caps, 'routine'),
    clock: platform.clock,
    notifier: platform.notifier,
    inbox: deps.inbox,
    publicUrl: platform.publicUrl,
    logger: platform.logger,
    metrics: platform.metrics,
    events: deps.events,
    audit: platform.audit,
  });
  /** Hears of `routine_execution` messages (kernel/ports.ts `OutcomeHandlers`). */
  const outcomeHandler: OutcomeHandler = {
    // A delivery moves its execution to running.
    delivered: true,
    handle: async (tx, outcomes) => {
      for (const outcome of outcomes) await service.handleOutcome(tx, outcome);
    },
  };

  // One pass fires due slots and expires overdue executions, then sleeps until the next due
  // time (a timer, not per-routine polling); a routine change anywhere cuts the sleep short.
  const scheduler = new LoopWorker({
    name: 'routine-scheduler',
    intervalMs: MAX_SLEEP_MS,
    logger: platform.logger,
    wakeOn: { notifier: platform.notifier, channel: ROUTINES_CHANGED },
    run: async () => {
      await service.fireDue();
      await service.fireDebounced();
      await service.expireTimedOut();
      const next = await service.nextWakeAt();
      return next === null ? MAX_SLEEP_MS : Math.min(MAX_SLEEP_MS, Math.max(0, next - platform.clock.now()));
    },
  });
  // Finished executions and fires are kept as long as finished runs; an unfinished execution has no end.
  const keepMs = platform.config.runRetentionDays * DAY_MS;
  const retention: RetentionRule[] = [
    {
      name: 'routine-executions',
      async deleteExpired(now, limit) {
        const executions = await store.deleteExecutionsEndedBefore(autocommit, now - keepMs, limit);
        return { deleted: { routine_executions: executions }, more: executions === limit };
      },
    },
    {
      name: 'routine-fires',
      async deleteExpired(now, limit) {
        const fires = await store.deleteFiresBefore(autocommit, now - keepMs, limit);
        return { deleted: { routine_fires: fires }, more: fires === limit };
      },
    },
  ];
  return { service, outcomeHandler, routes: routinesRoutes(service), workers: [scheduler], retention };
}
