import type { Logger } from 'pino';
import type { Notifier } from '../kernel/notifier.js';

export interface Worker {
  readonly name: string;
  start(): void;
  stop(): Promise<void>;
}

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
}

/**
 * A background loop with a stop signal (house style): runs, sleeps until the next interval or
 * a nudge (a notifier wake-up), and never overlaps itself. The first run is jittered so nodes
 * started together do not run in lockstep. A failed pass is logged and retried next time.
 */
export class LoopWorker implements Worker {
  readonly name: string;
  private readonly controller = new AbortController();
  private wake: (() => void) | null = null;
  private nudged = false;
  private loop: Promise<void> | null = null;
  private unlisten: (() => void) | null = null;

  constructor(private readonly options: LoopWorkerOptions) {
    this.name = options.name;
  }

  start(): void {
    if (this.loop) return;
    const { wakeOn } = this.options;
    if (wakeOn) {
      const notice = () => {
        wakeOn.onNotice?.();
        this.nudge();
      };
      // A resume is a notice that may have been lost: run once more.
      const unlisten = wakeOn.notifier.listen(wakeOn.channel, notice);
      const unresume = wakeOn.notifier.onResume(notice);
      this.unlisten = () => {
        unlisten();
        unresume();
      };
    }
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
      try {
        const next = await this.options.run(signal);
        if (typeof next === 'number') delay = Math.max(0, next);
      } catch (err) {
        if (!signal.aborted) this.options.logger.error({ err, worker: this.name }, 'worker pass failed');
      }
      await this.sleep(delay);
    }
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
