import { Worker } from 'node:worker_threads';

/**
 * Moves SQLite's WAL checkpoints off the event loop. By default the commit that takes the
 * WAL past 1,000 pages copies it into the database file itself: 5–120 ms inside one request,
 * about 3% of the commits of a write burst (measured). The server's connection turns that off
 * and a worker thread with its own connection runs a PASSIVE checkpoint (it never blocks
 * readers or the writer) every `intervalMs`. Should the worker die, the connection's own
 * checkpoints come back, so the WAL cannot grow without bound. The thread runs checkpoint-worker.js.
 *
 * The WAL file keeps its largest size unless truncated: once it passes `truncateAboveBytes` the
 * worker truncates it whenever no reader or writer is in the way, and the connection's
 * journal_size_limit (WAL_LIMIT_BYTES) cuts it back each time the WAL restarts from its head.
 */
export interface Checkpointer {
  stop(): Promise<void>;
}

/** The size the WAL file is cut back to when it restarts (SQLite's journal_size_limit). */
export const WAL_LIMIT_BYTES = 64 * 1024 * 1024;

export function startCheckpointer(
  file: string,
  onExit: () => void,
  intervalMs = 100,
  truncateAboveBytes = WAL_LIMIT_BYTES / 4,
): Checkpointer {
  // Beside this file in src/ and in dist/ alike.
  const worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { file, intervalMs, truncateAboveBytes } });
  let stopping = false;
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      if (!stopping) onExit();
      resolve();
    }),
  );
  worker.on('error', () => undefined);
  return {
    stop: async () => {
      stopping = true;
      worker.postMessage('stop');
      await exited;
    },
  };
}
