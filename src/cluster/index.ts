import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/database.js';
import { autocommit } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import type { Platform } from '../platform.js';
import { FixedWindowRateLimiter, type RateLimiter } from '../kernel/rate-limiter.js';
import { LoopWorker } from '../workers/loop-worker.js';
import type { WorkerReport } from '../workers/workers.js';
import { clusterRoutes } from './routes.js';
import { ClusterService, HEARTBEAT_MS } from './service.js';
import { ClusterStore } from './store.js';

import { SharedRateLimiter, type BudgetLedger } from './rate-limiter.js';

export { ClusterService, DOWN_AFTER_MS, HEARTBEAT_MS } from './service.js';
export { SharedRateLimiter } from './rate-limiter.js';
export * as clusterSchemas from './schemas.js';

/**
 * The cluster domain: this node's entry in the node registry, its
 * heartbeat worker, and `GET /cluster/nodes` (with this node's workers, `workers`). app.ts
 * registers the node before the workers start and marks it down after they stop.
 */
export function createClusterDomain(deps: { platform: Platform; version: string; workers: WorkerReport }) {
  const { platform } = deps;
  const service = new ClusterService({
    store: new ClusterStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    version: deps.version,
    rateWindowMs: platform.config.rateWindowSeconds * 1000,
    workers: deps.workers,
  });
  const heartbeat = new LoopWorker({
    name: 'cluster-heartbeat',
    intervalMs: HEARTBEAT_MS,
    logger: platform.logger,
    run: () => service.heartbeat(),
  });
  return { service, routes: clusterRoutes(service), workers: [heartbeat] };
}

/**
 * The principals' request budgets: one per principal across the cluster on PostgreSQL (leased
 * slices of a shared counter), in memory on SQLite (one node: exact and free).
 */
export function createPrincipalRateLimiter(deps: { database: DatabaseHandle; config: Config; clock: Clock; logger: Logger }): RateLimiter {
  const { database, config, clock } = deps;
  if (database.caps.kind !== 'postgres' || !config.sharedRateLimit)
    return new FixedWindowRateLimiter(config.rateLimit, config.rateWindowSeconds, () => clock.now());
  const store = new ClusterStore(database.db, database.caps);
  const ledger: BudgetLedger = {
    lease: (bucket, windowStart, slice) => store.lease(autocommit, bucket, windowStart, slice),
    leased: (bucket, windowStart) => store.leased(autocommit, bucket, windowStart),
  };
  return new SharedRateLimiter(ledger, config.rateLimit, config.rateWindowSeconds, () => clock.now(), deps.logger);
}
