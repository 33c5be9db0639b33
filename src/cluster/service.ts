import os from 'node:os';
import { autocommit } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { newId } from '../kernel/ids.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { NodeRegistry } from '../kernel/ports.js';
import type { WorkerStatus } from '../workers/worker.js';
import type { WorkerReport } from '../workers/workers.js';
import type { ClusterNode, WorkerStatus as WorkerEntry } from './schemas.js';
import type { ClusterStore, NodeRow } from './store.js';

/** How often a node heartbeats. */
export const HEARTBEAT_MS = 5_000;
/** A node silent this long is down: six missed heartbeats, so a slow pass or two is not an outage. */
export const DOWN_AFTER_MS = 30_000;
/** Rows of nodes silent this long are deleted: a day of history for whoever looks after an incident. */
export const SWEEP_AFTER_MS = 24 * 3600_000;

export interface ClusterDeps {
  store: ClusterStore;
  clock: Clock;
  version: string;
  /** The rate-limit window: shared budgets' rows of windows before the previous one are deleted. */
  rateWindowMs: number;
  /** This node's background workers, shown on its own entry. */
  workers: WorkerReport;
}

/**
 * The node registry: this node's row, kept fresh by the heartbeat, and the list of
 * every node on the database. A node never trusts another's clock for its status: `down` is
 * computed by the reader from `last_seen_at`, so a node that died without a word turns down
 * 30 s after its last heartbeat, wherever it is read.
 */
export class ClusterService implements NodeRegistry {
  readonly nodeId: string;
  private readonly startedAt: number;

  constructor(private readonly deps: ClusterDeps) {
    this.startedAt = deps.clock.now();
    this.nodeId = newId('node', this.startedAt);
  }

  private row(now: number): NodeRow {
    return {
      id: this.nodeId,
      version: this.deps.version,
      host: os.hostname(),
      pid: process.pid,
      started_at: this.startedAt,
      last_seen_at: now,
      stopped_at: null,
    };
  }

  /** Inserts this node's row (at start). */
  async register(): Promise<void> {
    await this.deps.store.insertNode(autocommit, this.row(this.deps.clock.now()));
  }

  /**
   * One heartbeat, the sweep of long-dead nodes and of finished rate-limit windows (indexed
   * ranges, usually empty). A row swept while this node was cut off from the database comes back.
   */
  async heartbeat(): Promise<void> {
    const now = this.deps.clock.now();
    if (!(await this.deps.store.touch(autocommit, this.nodeId, now))) await this.deps.store.insertNode(autocommit, this.row(now));
    await this.deps.store.sweep(autocommit, now - SWEEP_AFTER_MS);
    const windowMs = this.deps.rateWindowMs;
    await this.deps.store.sweepWindows(autocommit, Math.floor(now / windowMs) * windowMs - windowMs);
  }

  /** A clean shutdown: down at once. */
  async stopped(): Promise<void> {
    await this.deps.store.markStopped(autocommit, this.nodeId, this.deps.clock.now());
  }

  /** The nodes up now: by the rule of `status`, on this node's clock. */
  async liveNodeIds(): Promise<string[]> {
    return this.deps.store.liveNodeIds(autocommit, this.deps.clock.now() - DOWN_AFTER_MS);
  }

  async leads(): Promise<boolean> {
    const live = await this.liveNodeIds();
    return live.every((id) => id >= this.nodeId);
  }

  async list(window: Page): Promise<Paged<ClusterNode>> {
    const page = await this.deps.store.listNodes(autocommit, window);
    const now = this.deps.clock.now();
    const items = page.items.map((row) => this.toNode(row, now));
    const self = items.find((node) => node.id === this.nodeId);
    if (self) self.workers = this.deps.workers.statuses().map(workerEntry);
    return { ...page, items };
  }

  private toNode(row: NodeRow, now: number): ClusterNode {
    const down = row.stopped_at !== null || now - Number(row.last_seen_at) > DOWN_AFTER_MS;
    return {
      id: row.id,
      version: row.version,
      host: row.host,
      pid: row.pid,
      started_at: iso(Number(row.started_at)),
      last_seen_at: iso(Number(row.last_seen_at)),
      status: down ? 'down' : 'up',
    };
  }
}

function workerEntry(status: WorkerStatus): WorkerEntry {
  return {
    name: status.name,
    runs: status.runs,
    failures: status.failures,
    consecutive_failures: status.consecutiveFailures,
    last_run_at: status.lastRun ? iso(status.lastRun.startedAt) : null,
    last_duration_ms: status.lastRun ? Math.round(status.lastRun.durationMs * 1000) / 1000 : null,
    running_since: status.runningSince === null ? null : iso(status.runningSince),
    last_error: status.lastError ? { message: status.lastError.message, at: iso(status.lastError.at) } : null,
  };
}
