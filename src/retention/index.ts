import type { Platform } from '../platform.js';
import type { NodeRegistry, RetentionRule } from '../kernel/ports.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { RetentionService } from './service.js';

export { RetentionService, type RetentionPass } from './service.js';

/** How often the worker looks for expired rows once none are left. */
const PASS_INTERVAL_MS = 10 * 60_000;

/**
 * The retention worker: the cluster's leader deletes the expired rows of every domain's rules,
 * a batch per rule per pass, passes back to back while any rule has more, then every ten minutes.
 */
export function createRetention(deps: {
  platform: Platform;
  nodes: NodeRegistry;
  rules: readonly RetentionRule[];
  /** Tends the tables once a pass left nothing to delete (returns what it tended). */
  upkeep: () => Promise<string[]>;
}) {
  const { platform } = deps;
  const service = new RetentionService({
    nodes: deps.nodes,
    clock: platform.clock,
    metrics: platform.metrics,
    rules: deps.rules,
    batchSize: platform.config.retentionBatchSize,
  });
  const loop = new LoopWorker({
    name: 'retention',
    intervalMs: PASS_INTERVAL_MS,
    logger: platform.logger,
    run: async () => {
      const pass = await service.pass();
      if (pass === null) return;
      if (Object.keys(pass.deleted).length > 0) platform.logger.debug({ deleted: pass.deleted }, 'retention deleted expired rows');
      // Back to back (after a turn of the event loop) while a rule's batch came back full.
      if (pass.more) return 0;
      const tended = await deps.upkeep();
      if (tended.length > 0) platform.logger.info({ tables: tended }, 'vacuumed and analyzed tables autovacuum skips');
      return undefined;
    },
  });
  return { service, workers: [loop] };
}
