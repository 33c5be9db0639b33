import type { Platform } from '../kernel/platform.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { messagingRoutes } from './routes.js';
import { MessagingService } from './service.js';
import { MessagingStore } from './store.js';

export { MessagingService } from './service.js';
export { topicMatches, topicProblem } from './topics.js';

/** How often the reaper looks for exhausted leases and newly visible delayed messages. */
const REAPER_INTERVAL_MS = 250;
const SWEEP_INTERVAL_MS = 60_000;

export function createMessagingDomain(platform: Platform) {
  const service = new MessagingService({
    store: new MessagingStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    notifier: platform.notifier,
    limiter: platform.limiter,
    logger: platform.logger,
  });
  let since = platform.clock.now();
  // Each pass looks only at leases that ran out since the previous one; the first pass (leases
  // that ran out while the server was down) and one a minute look at every expired lease, for
  // the rare one a pass skipped (on PostgreSQL, locked by a transaction that then rolled back).
  let sweepAt = 0;
  const reaper = new LoopWorker({
    name: 'message-reaper',
    intervalMs: REAPER_INTERVAL_MS,
    logger: platform.logger,
    run: async () => {
      const now = platform.clock.now();
      const sweep = now >= sweepAt;
      await service.reap(since, sweep ? 0 : since);
      since = now;
      if (sweep) sweepAt = now + SWEEP_INTERVAL_MS;
    },
  });
  return { service, routes: messagingRoutes(service, platform.shutdown), workers: [reaper] };
}
