import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/database.js';
import type { Clock } from '../kernel/clock.js';
import type { AuditActor } from '../kernel/request-scope.js';
import { LoopWorker } from '../workers/loop-worker.js';
import type { Worker } from '../workers/worker.js';
import { auditRoutes } from './routes.js';
import { AuditService } from './service.js';
import { AuditStore } from './store.js';

export { AuditService } from './service.js';
export { canonicalJson, entryHash, GENESIS_HASH } from './chain.js';
export * as auditSchemas from './schemas.js';
export type { AuditEntry, AuditVerification } from './schemas.js';

/** How often the retention sweep runs. */
const SWEEP_INTERVAL_MS = 60 * 60_000;

/** The audit service alone, for a process that records or verifies without serving (the CLI). */
export function createAuditService(deps: {
  database: DatabaseHandle;
  clock: Clock;
  config: Config;
  logger: Logger;
  actor?: AuditActor;
}): AuditService {
  const { database, config } = deps;
  return new AuditService({
    store: new AuditStore(database.db, database.caps),
    clock: deps.clock,
    logger: deps.logger,
    retentionDays: config.auditRetentionDays,
    denialWindowMs: config.auditDenialWindowMs,
    actor: deps.actor,
  });
}

/**
 * The audit log: the AuditTrail every domain records its changes
 * to, what the HTTP layer tells it of denied and failed requests, its routes, the denial
 * flusher (which appends what is left when it stops) and the retention sweep.
 */
export function createAuditDomain(deps: { database: DatabaseHandle; clock: Clock; config: Config; logger: Logger }) {
  const service = createAuditService(deps);
  const flusher = new LoopWorker({
    name: 'audit-denials',
    intervalMs: deps.config.auditDenialWindowMs,
    logger: deps.logger,
    run: () => service.flushDenials(),
  });
  const denials: Worker = {
    name: flusher.name,
    start: () => flusher.start(),
    stop: async () => {
      await flusher.stop();
      await service.flushDenials(true);
    },
    status: () => flusher.status(),
  };
  const sweeper = new LoopWorker({
    name: 'audit-retention',
    intervalMs: SWEEP_INTERVAL_MS,
    logger: deps.logger,
    run: async () => {
      const removed = await service.sweep();
      if (removed > 0) deps.logger.info({ removed }, 'trimmed the audit log');
    },
  });
  return { service, routes: auditRoutes(service), workers: [denials, sweeper] };
}
