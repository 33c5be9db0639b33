import type { Clock } from '../kernel/clock.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import type { NodeRegistry, RetentionRule } from '../kernel/ports.js';

/** What one pass did: rows deleted by table, and whether any rule had a full batch (run again soon). */
export interface RetentionPass {
  readonly deleted: Record<string, number>;
  readonly more: boolean;
}

/**
 * Retention: deletes what every domain lets go of (its rules), a batch per rule per pass, so
 * that no statement holds its locks for long and the rules take turns. A pass runs on the
 * cluster's leader; the others skip theirs (two leaders for a moment delete the same batch twice:
 * the second finds it gone).
 */
export class RetentionService {
  /** The pass under way: a direct pass and the worker's never overlap. */
  private running: Promise<RetentionPass | null> = Promise.resolve(null);

  constructor(
    private readonly deps: {
      nodes: NodeRegistry;
      clock: Clock;
      metrics: DomainMetrics;
      rules: readonly RetentionRule[];
      batchSize: number;
    },
  ) {}

  /** One batch of each rule; null when another node leads. */
  pass(): Promise<RetentionPass | null> {
    const next = this.running.catch(() => null).then(() => this.runPass());
    this.running = next;
    return next;
  }

  private async runPass(): Promise<RetentionPass | null> {
    const { nodes, clock, rules, batchSize, metrics } = this.deps;
    if (!(await nodes.leads())) return null;
    const now = clock.now();
    const deleted: Record<string, number> = {};
    let more = false;
    for (const rule of rules) {
      const batch = await rule.deleteExpired(now, batchSize);
      more ||= batch.more;
      for (const [table, count] of Object.entries(batch.deleted)) {
        if (count === 0) continue;
        deleted[table] = (deleted[table] ?? 0) + count;
        metrics.retentionDeleted(table, count);
      }
      // Requests waiting on the event loop go between two batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return { deleted, more };
  }
}
