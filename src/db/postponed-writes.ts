import type { Logger } from 'pino';
import { LoopWorker } from '../workers/loop-worker.js';
import type { Worker } from '../workers/worker.js';
import { storageFault, type StorageFullness } from './faults.js';

/** How often postponed writes are tried again (a write that succeeds, which means there is room again, tries them at once). */
const RETRY_MS = 5_000;

/**
 * Start-up writes that a full disk postpones instead of failing the start: a node that crashed
 * on a full disk then starts in the mode it has when the disk fills while it runs (reads served,
 * writes 507, /readyz says why) rather than exiting until space is freed by hand. Its `worker`
 * tries them again every few seconds, and at once when a write succeeds. Each write must be
 * idempotent: a retry may follow one that another path (the heartbeat) already did.
 */
export class PostponedWrites {
  private readonly pending = new Map<string, () => Promise<unknown>>();
  readonly worker: Worker;

  constructor(
    private readonly storage: StorageFullness,
    private readonly logger: Logger,
  ) {
    this.worker = new LoopWorker({
      name: 'postponed-writes',
      intervalMs: RETRY_MS,
      run: () => this.retry(),
      logger,
      listen: (nudge) => storage.onRoom(nudge),
    });
  }

  /** Runs `write`; when storage is full, keeps it for `retry` and marks storage full. Any other failure is thrown. */
  async run(name: string, write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (err) {
      if (storageFault(err) !== 'full') throw err;
      this.storage.markFull();
      this.pending.set(name, write);
      this.logger.warn({ err, write: name }, `no storage space left: ${name} postponed until a write succeeds`);
    }
  }

  /** The writes waiting, by name, in the order they were postponed. */
  get names(): string[] {
    return [...this.pending.keys()];
  }

  /**
   * Tries each postponed write once more, in order. One refused for lack of space (or with the
   * database out of reach) stays, and so do those after it; one that fails otherwise would fail
   * the same way forever, so it is logged and dropped.
   */
  async retry(): Promise<void> {
    let wrote = false;
    for (const [name, write] of this.pending) {
      try {
        await write();
        wrote = true;
      } catch (err) {
        const fault = storageFault(err);
        if (fault === 'full') this.storage.markFull();
        if (fault !== null) return;
        this.logger.error({ err, write: name }, `${name} failed; not tried again`);
        this.pending.delete(name);
        continue;
      }
      this.pending.delete(name);
      this.logger.info({ write: name }, `${name} done after it was postponed for lack of space`);
    }
    if (wrote) this.storage.markRoom();
  }
}
