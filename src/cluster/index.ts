import type { Platform } from '../kernel/platform.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { clusterRoutes } from './routes.js';
import { ClusterService, HEARTBEAT_MS } from './service.js';
import { ClusterStore } from './store.js';

export { ClusterService, DOWN_AFTER_MS, HEARTBEAT_MS } from './service.js';
export * as clusterSchemas from './schemas.js';

/**
 * The cluster domain (design §10, issue 24): this node's entry in the node registry, its
 * heartbeat worker, and `GET /cluster/nodes`. app.ts registers the node before the workers
 * start and marks it down after they stop.
 */
export function createClusterDomain(deps: { platform: Platform; version: string }) {
  const { platform } = deps;
  const service = new ClusterService({
    store: new ClusterStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    version: deps.version,
  });
  const heartbeat = new LoopWorker({
    name: 'cluster-heartbeat',
    intervalMs: HEARTBEAT_MS,
    logger: platform.logger,
    run: () => service.heartbeat(),
  });
  return { service, routes: clusterRoutes(service), workers: [heartbeat] };
}
