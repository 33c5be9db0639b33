import { Worker } from 'node:worker_threads';

/**
 * Moves SQLite's WAL checkpoints off the event loop. By default the commit that takes the
 * WAL past 1,000 pages copies it into the database file itself: 5–120 ms inside one request,
 * about 3% of the commits of a write burst (measured). The server's connection turns that off
 * and a worker thread with its own connection runs a PASSIVE checkpoint (it never blocks
 * readers or the writer) every `intervalMs`. Should the worker die, the connection's own
 * checkpoints come back, so the WAL cannot grow without bound. The thread runs checkpoint-worker.js.
 */
export interface Checkpointer {
  stop(): Promise<void>;
}

export function startCheckpointer(file: string, onExit: () => void, intervalMs = 100): Checkpointer {
  // Beside this file in src/ and in dist/ alike.
  const worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { file, intervalMs } });
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
