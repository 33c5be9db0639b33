import type { Platform } from '../platform.js';
import type { AgentHeartbeats, ClaimChecks, EventLog } from '../kernel/ports.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { channelRoutes } from './channel-routes.js';
import { InboxService } from './inbox.js';
import { InboxSpans } from './inbox-tracing.js';
import { PayloadRefs } from './payload-refs.js';
import { messageRetention } from './retention.js';
import { MessageRetentionStore } from './retention-store.js';
import { messagingRoutes } from './routes.js';
import { MessagingStore } from './store.js';
import { SubscriptionsStore } from './subscriptions-store.js';
import { SubscriptionsService } from './subscriptions.js';
import { ThreadsService } from './threads.js';
import { ThreadsStore } from './threads-store.js';
import { InboxViewsStore } from './views-store.js';

export { DEFAULT_VISIBILITY_S, InboxService, MAX_BATCH, MAX_WAIT_S } from './inbox.js';
export { callerOf } from './messages.js';

/**
 * The body limit of the routes that take payloads: the upload limit, as a payload over the
 * inline limit becomes an artifact; capped at 512 MiB, near V8's longest string (the body is
 * parsed whole).
 */
function payloadBodyBytes(config: Platform['config']): number {
  return Math.max(config.maxJsonBodyBytes, Math.min(config.maxUploadBytes, 512 * 1024 ** 2));
}

/** How often the reaper looks for exhausted leases and newly visible delayed messages. */
const REAPER_INTERVAL_MS = 250;
const SWEEP_INTERVAL_MS = 60_000;

/**
 * Messaging: the inbox, threads, subscriptions, their routes and the reaper. The agent channel's
 * routes are built apart (`channelRoutes`) from discovery's heartbeats, once discovery exists:
 * discovery is built from messaging's delivery stats, so messaging is built without it.
 */
export function createMessagingDomain(platform: Platform, events: EventLog) {
  const { clock, logger } = platform;
  const store = new MessagingStore(platform.database.db, platform.database.caps);
  const payloads = new PayloadRefs(platform.config.inlinePayloadBytes);
  const threads = new ThreadsService({ store: new ThreadsStore(platform.database.db, platform.database.caps), clock, payloads });
  const viewStore = new InboxViewsStore(platform.database.db, platform.database.caps);
  const inbox = new InboxService({
    store,
    viewStore,
    threads,
    clock,
    notifier: platform.notifier,
    limiter: platform.limiter,
    logger,
    events,
    metrics: platform.metrics,
    tracing: new InboxSpans(),
    audit: platform.audit,
    payloads,
  });
  const subscriptions = new SubscriptionsService({
    store: new SubscriptionsStore(platform.database.db, platform.database.caps),
    inbox,
    payloads,
    clock,
    logger,
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
      await inbox.reap(since, sweep ? 0 : since);
      since = now;
      if (sweep) sweepAt = now + SWEEP_INTERVAL_MS;
    },
  });
  const channel = (heartbeats: AgentHeartbeats) =>
    channelRoutes(
      {
        inbox,
        subscriptions,
        heartbeats,
        limiter: platform.limiter,
        logger,
        maxFrameBytes: platform.config.maxJsonBodyBytes,
        connections: platform.connections,
        stalledClientMs: platform.config.stalledClientMs,
      },
      platform.shutdown,
    );
  return {
    inbox,
    subscriptions,
    routes: messagingRoutes({ inbox, threads, subscriptions, payloads }, platform.shutdown, payloadBodyBytes(platform.config)),
    /** Where offloaded payloads go (artifacts, built after messaging). */
    useClaimChecks: (checks: ClaimChecks) => payloads.useClaimChecks(checks),
    channelRoutes: channel,
    workers: [reaper],
    retention: [
      messageRetention(new MessageRetentionStore(platform.database.db, platform.database.caps), payloads, {
        messageDays: platform.config.messageRetentionDays,
        deadLetterDays: platform.config.deadLetterRetentionDays,
      }),
    ],
  };
}
