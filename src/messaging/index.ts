import type { Platform } from '../app.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { messagingRoutes } from './routes.js';
import { MessagingService } from './service.js';
import { MessagingStore } from './store.js';

export { MessagingService, inboxChannel } from './service.js';
export { topicMatches, topicProblem } from './topics.js';

/** How often the reaper looks for exhausted leases and newly visible delayed messages. */
const REAPER_INTERVAL_MS = 250;

export function createMessagingDomain(platform: Platform) {
  const service = new MessagingService({
    store: new MessagingStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    notifier: platform.notifier,
    limiter: platform.limiter,
    logger: platform.logger,
  });
  let since = platform.clock.now();
  const reaper = new LoopWorker({
    name: 'message-reaper',
    intervalMs: REAPER_INTERVAL_MS,
    logger: platform.logger,
    run: async () => {
      const now = platform.clock.now();
      await service.reap(since);
      since = now;
    },
  });
  return { service, routes: messagingRoutes(service, platform.shutdown), workers: [reaper] };
}
