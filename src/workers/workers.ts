import type { Worker, WorkerStatus } from './worker.js';

/** Failed passes in a row after which a worker counts as failing (/readyz names it). */
export const FAILING_AFTER = 3;

/** What the node's workers have done, for whoever reports it (the cluster nodes answer, /readyz, /metrics). */
export interface WorkerReport {
  statuses(): WorkerStatus[];
}

/**
 * The node's background workers, in the order they start (after the server listens); they
 * stop in reverse. Names are unique: they label the workers' metrics.
 */
export class Workers implements WorkerReport {
  private readonly workers: Worker[] = [];
  private started = false;

  /** Adds workers before the start, after those already added. */
  add(...workers: Worker[]): void {
    if (this.started) throw new Error('workers are added before they start');
    for (const worker of workers) {
      if (this.workers.some((known) => known.name === worker.name)) throw new Error(`two workers are named ${worker.name}`);
      this.workers.push(worker);
    }
  }

  start(): void {
    this.started = true;
    for (const worker of this.workers) worker.start();
  }

  async stop(): Promise<void> {
    for (const worker of [...this.workers].reverse()) await worker.stop();
  }

  statuses(): WorkerStatus[] {
    return this.workers.map((worker) => worker.status());
  }

  /** The workers whose last FAILING_AFTER passes (or more) all threw. */
  failing(): string[] {
    return this.statuses()
      .filter((status) => status.consecutiveFailures >= FAILING_AFTER)
      .map((status) => status.name);
  }
}
