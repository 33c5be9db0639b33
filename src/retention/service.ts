import { randomUUID } from 'node:crypto';
import { autocommit } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import type { RetentionRule } from '../kernel/ports.js';
import type { RetentionStore } from './store.js';

/** The lease's name in worker_leases. */
const LEASE = 'retention';

/** What one pass did: rows deleted by table, and whether any rule had a full batch (run again soon). */
export interface RetentionPass {
  readonly deleted: Record<string, number>;
  readonly more: boolean;
}

/**
 * Retention: deletes what every domain lets go of (its rules), a batch per rule per pass, so
 * that no statement holds its locks for long and the rules take turns. A pass runs on the
 * node that holds the lease; the others skip theirs until it lapses (a node that stops or
 * dies hands it over within `leaseMs`).
 */
export class RetentionService {
  /** This process's name on the lease. */
  private readonly holder = randomUUID();
  /** The pass under way: a direct pass and the worker's never overlap. */
  private running: Promise<RetentionPass | null> = Promise.resolve(null);

  constructor(
    private readonly deps: {
      store: RetentionStore;
      clock: Clock;
      metrics: DomainMetrics;
      rules: readonly RetentionRule[];
      batchSize: number;
      leaseMs: number;
    },
  ) {}

  /** One batch of each rule; null when another node holds the lease. */
  pass(): Promise<RetentionPass | null> {
    const next = this.running.catch(() => null).then(() => this.runPass());
    this.running = next;
    return next;
  }

  /** Gives up the lease, so another node takes over without waiting for it to lapse. */
  async release(): Promise<void> {
    await this.running.catch(() => null);
    await this.deps.store.releaseLease(autocommit, LEASE, this.holder);
  }

  private async runPass(): Promise<RetentionPass | null> {
    const { store, clock, rules, batchSize, leaseMs, metrics } = this.deps;
    const now = clock.now();
    if (!(await store.acquireLease(autocommit, LEASE, this.holder, now, now + leaseMs))) return null;
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
