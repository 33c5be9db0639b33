// @ts-check
// The checkpointer's thread (checkpointer.ts). Plain JavaScript, so the same file runs from
// src/ under the tests and from dist/ after the build (tsc copies it, and checks it: allowJs).
import { clearTimeout, setTimeout } from 'node:timers';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

if (!parentPort) throw new Error('checkpoint-worker.js runs only as a worker thread');
const port = parentPort;
/** @type {{ file: string; intervalMs: number }} */
const { file, intervalMs } = workerData;
const db = new Database(file);
db.pragma('busy_timeout = 1000');
/** @type {NodeJS.Timeout | undefined} */
let timer;
const pass = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // busy: the next pass takes it
  }
  timer = setTimeout(pass, intervalMs);
};
port.on('message', () => {
  clearTimeout(timer);
  db.close();
  port.close();
});
pass();
