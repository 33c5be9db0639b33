import type { Logger } from 'pino';
import type { Clock } from '../kernel/clock.js';
import type { Notifier } from '../kernel/notifier.js';
import { LoopWorker } from '../workers/loop-worker.js';
import type { Worker, WorkerStatus } from '../workers/worker.js';
import { WEBHOOK_DELIVERIES_DUE, type WebhooksService } from './service.js';

/** Attempts one node has in flight at most: a slow receiver holds one slot, not the worker. */
const MAX_IN_FLIGHT = 32;

export interface DeliveryWorkerOptions {
  service: WebhooksService;
  clock: Clock;
  notifier: Notifier;
  logger: Logger;
  /** Longest sleep between two looks for due deliveries (a notice or a finished attempt cuts it short). */
  pollMs: number;
}

/**
 * Makes the attempts of due deliveries: claims as many as it has free slots (SKIP LOCKED, so
 * N nodes take different ones), runs them concurrently, and claims again as slots free up or
 * when the next retry falls due. Stopping ends the attempts in flight (not recorded: their
 * lease runs out and they are attempted again) and waits for them.
 */
export class DeliveryWorker implements Worker {
  readonly name = 'webhook-delivery';
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly loop: LoopWorker;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.loop = new LoopWorker({
      name: this.name,
      intervalMs: options.pollMs,
      logger: options.logger,
      wakeOn: { notifier: options.notifier, channel: WEBHOOK_DELIVERIES_DUE },
      run: () => this.pass(),
    });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    this.stopping.abort();
    await Promise.allSettled(this.inFlight);
  }

  /** The claiming loop's passes; an attempt's outcome is the delivery's, not the worker's. */
  status(): WorkerStatus {
    return this.loop.status();
  }

  /**
   * Starts the due attempts there is room for; returns how long to sleep. It claims only when
   * something is due: a claim is a write, and an idle node should take no write lock.
   */
  private async pass(): Promise<number> {
    const { service, clock, logger, pollMs } = this.options;
    for (;;) {
      const next = await service.nextDueAt();
      if (next === null) return pollMs;
      if (next > clock.now()) return Math.min(pollMs, next - clock.now());
      const room = MAX_IN_FLIGHT - this.inFlight.size;
      // Full: a finished attempt nudges the loop.
      if (room <= 0) return pollMs;
      const claimed = await service.claimDue(room);
      // Another node took them first (or holds them locked): look again after a while.
      if (claimed.length === 0) return pollMs;
      for (const delivery of claimed) {
        const attempt = service
          .attempt(delivery, this.stopping.signal)
          .catch((err: unknown) => logger.error({ err, delivery: delivery.id }, 'webhook attempt failed to record'))
          .finally(() => {
            this.inFlight.delete(attempt);
            this.loop.nudge();
          });
        this.inFlight.add(attempt);
      }
    }
  }
}
