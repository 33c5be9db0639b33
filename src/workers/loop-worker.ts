import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Notifier } from '../kernel/notifier.js';
import type { Worker, WorkerStatus } from './worker.js';

export type { Worker, WorkerStatus } from './worker.js';

/** The longest error message a status keeps (a driver's can quote a whole statement). */
const MAX_ERROR_MESSAGE = 1000;

export interface LoopWorkerOptions {
  name: string;
  /** Longest sleep between two runs; `nudge()` cuts it short. */
  intervalMs: number;
  /** One pass of work; returns the ms until it wants to run again (default: intervalMs). */
  run: (signal: AbortSignal) => Promise<number | void>;
  logger: Logger;
  /** Notices on this channel nudge the worker while it runs (listening from start to stop). */
  wakeOn?: {
    notifier: Notifier;
    channel: string;
    /** Runs on each notice before the nudge, e.g. to drop what the notice made stale. */
    onNotice?: () => void;
  };
  /**
   * Subscribes to what should run the worker again (storage that has room again, a revocation),
   * from start to stop: returns its unsubscribe.
   */
  listen?: (nudge: () => void) => () => void;
}

/**
 * A background loop with a stop signal (house style): runs, sleeps until the next interval or
 * a nudge (a notifier wake-up), and never overlaps itself. The first run is jittered so nodes
 * started together do not run in lockstep. A failed pass is logged and retried next time. It
 * keeps count of its passes, their durations and its last error (`status`).
 */
export class LoopWorker implements Worker {
  readonly name: string;
  private readonly controller = new AbortController();
  private wake: (() => void) | null = null;
  private nudged = false;
  private loop: Promise<void> | null = null;
  private unlisten: (() => void) | null = null;
  private runs = 0;
  private failures = 0;
  private consecutiveFailures = 0;
  private lastRun: WorkerStatus['lastRun'] = null;
  private runningSince: number | null = null;
  private lastError: WorkerStatus['lastError'] = null;
  private busySeconds = 0;

  constructor(private readonly options: LoopWorkerOptions) {
    this.name = options.name;
  }

  start(): void {
    if (this.loop) return;
    const { wakeOn, listen } = this.options;
    const unlisteners: (() => void)[] = [];
    if (wakeOn) {
      const notice = () => {
        wakeOn.onNotice?.();
        this.nudge();
      };
      // A resume is a notice that may have been lost: run once more.
      unlisteners.push(wakeOn.notifier.listen(wakeOn.channel, notice), wakeOn.notifier.onResume(notice));
    }
    if (listen) unlisteners.push(listen(() => this.nudge()));
    this.unlisten = () => unlisteners.forEach((unlisten) => unlisten());
    this.loop = this.runLoop();
  }

  /** Run again as soon as the current pass (if any) has finished. */
  nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  private sleep(ms: number): Promise<void> {
    if (this.nudged || this.controller.signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    }).then(() => {
      this.wake = null;
    });
  }

  private async runLoop(): Promise<void> {
    const { signal } = this.controller;
    await this.sleep(Math.floor(Math.random() * Math.min(this.options.intervalMs, 100)));
    while (!signal.aborted) {
      this.nudged = false;
      let delay = this.options.intervalMs;
      const startedAt = Date.now();
      const started = performance.now();
      this.runningSince = startedAt;
      let failure: { err: unknown } | null = null;
      try {
        const next = await this.options.run(signal);
        if (typeof next === 'number') delay = Math.max(0, next);
      } catch (err) {
        failure = { err };
      }
      this.runningSince = null;
      // A pass that the stop cut short neither failed nor ran its course.
      if (signal.aborted) break;
      this.finished(startedAt, performance.now() - started, failure);
      await this.sleep(delay);
    }
  }

  private finished(startedAt: number, durationMs: number, failure: { err: unknown } | null): void {
    this.runs += 1;
    this.busySeconds += durationMs / 1000;
    this.lastRun = { startedAt, durationMs };
    if (failure === null) {
      this.consecutiveFailures = 0;
      return;
    }
    this.failures += 1;
    this.consecutiveFailures += 1;
    this.lastError = { message: messageOf(failure.err).slice(0, MAX_ERROR_MESSAGE), at: Date.now() };
    this.options.logger.error({ err: failure.err, worker: this.name }, 'worker pass failed');
  }

  status(): WorkerStatus {
    return {
      name: this.name,
      runs: this.runs,
      failures: this.failures,
      consecutiveFailures: this.consecutiveFailures,
      lastRun: this.lastRun,
      runningSince: this.runningSince,
      lastError: this.lastError,
      busySeconds: this.busySeconds,
    };
  }

  async stop(): Promise<void> {
    this.unlisten?.();
    this.unlisten = null;
    this.controller.abort();
    this.wake?.();
    await this.loop;
    this.loop = null;
  }
}

/** What an operator reads of a failure: a driver's AggregateError (one per address tried) has no message of its own. */
function messageOf(err: unknown): string {
  if (err instanceof AggregateError && err.message === '') return err.errors.map(messageOf).join('; ');
  if (err instanceof Error) return err.message === '' ? err.name : err.message;
  return String(err);
}
