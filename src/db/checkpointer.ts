import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Moves SQLite's WAL checkpoints off the event loop. By default the commit that takes the
 * WAL past 1,000 pages copies it into the database file itself: 5–120 ms inside one request,
 * about 3% of the commits of a write burst (measured). The server's connection turns that off
 * and a worker thread with its own connection runs a PASSIVE checkpoint (it never blocks
 * readers or the writer) every `intervalMs`. Should the worker die, the connection's own
 * checkpoints come back, so the WAL cannot grow without bound.
 */
export interface Checkpointer {
  stop(): Promise<void>;
}

// CommonJS for `eval`: the same text runs from src/ (tests) and dist/.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 1000');
let timer = null;
const pass = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* busy: the next pass takes it */ }
  timer = setTimeout(pass, workerData.intervalMs);
};
parentPort.on('message', () => { clearTimeout(timer); db.close(); parentPort.close(); });
pass();
`;

export function startCheckpointer(file: string, onExit: () => void, intervalMs = 100): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, intervalMs } });
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
