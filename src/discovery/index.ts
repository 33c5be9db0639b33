import type { Platform } from '../platform.js';
import type { DeliveryStats, EventLog } from '../kernel/ports.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { OpenAiEmbedder, type Embedder } from './embeddings.js';
import { discoveryRoutes } from './routes.js';
import { DISCOVERY_CHANGED, DiscoveryService } from './service.js';
import { DiscoveryStore } from './store.js';

export { DiscoveryService } from './service.js';
export type { AgentEntry, Capability, GroupMember, HealthRecord } from './views.js';
export { OpenAiEmbedder, embeddingsUrl, type Embedder } from './embeddings.js';
export { STRATEGIES, DEFAULT_STRATEGY, healthOf, type Health, type Strategy } from './routing.js';

/**
 * The index worker polls this often even without notifications, bounding how stale a node's
 * search index gets when a NOTIFY is lost (searches themselves always check first).
 */
const INDEX_POLL_MS = 5_000;
const PRUNE_EVERY_MS = 3600_000;
/** The health worker looks at most this long apart (less with a short TTL). */
const HEALTH_POLL_MS = 5_000;

export function createDiscoveryDomain(deps: {
  platform: Platform;
  events: EventLog;
  /** Measured delivery figures for the latency and trust strategies (messaging). */
  stats?: DeliveryStats;
  /** Overrides the embeddings client built from the configuration. */
  embedder?: Embedder | null;
  random?: () => number;
}) {
  const { platform } = deps;
  const { config } = platform;
  const embedder =
    deps.embedder !== undefined
      ? deps.embedder
      : config.llmUrl !== null && config.embeddingsModel !== null
        ? new OpenAiEmbedder({ url: config.llmUrl, model: config.embeddingsModel, apiKey: config.llmApiKey })
        : null;
  const service = new DiscoveryService({
    store: new DiscoveryStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    notifier: platform.notifier,
    logger: platform.logger,
    healthTtlSeconds: config.healthTtlSeconds,
    events: deps.events,
    audit: platform.audit,
    stats: deps.stats,
    embedder,
    random: deps.random,
  });

  // Keeps this node's search index current (built on start, patched on every change
  // anywhere in the cluster), embeds new capabilities, and prunes old deletions hourly.
  let lastPrune = 0;
  const indexer = new LoopWorker({
    name: 'discovery-index',
    intervalMs: INDEX_POLL_MS,
    logger: platform.logger,
    wakeOn: { notifier: platform.notifier, channel: DISCOVERY_CHANGED },
    run: async () => {
      await service.syncIndex();
      if (embedder) {
        await service.embedMissing().catch((err: unknown) => platform.logger.warn({ err }, 'could not embed capabilities'));
      }
      const now = platform.clock.now();
      if (now - lastPrune > PRUNE_EVERY_MS) {
        lastPrune = now;
        await service.pruneHistory();
      }
    },
  });
  // Health changes with time alone (a heartbeat that stops coming): this pass finds them,
  // at least twice per TTL.
  const health = new LoopWorker({
    name: 'agent-health',
    intervalMs: Math.min(HEALTH_POLL_MS, (config.healthTtlSeconds * 1000) / 2),
    logger: platform.logger,
    run: () => service.announceHealthChanges().then(() => undefined),
  });
  return { service, routes: discoveryRoutes(service), workers: [indexer, health] };
}
