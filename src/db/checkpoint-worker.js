// @ts-check
// The checkpointer's thread (checkpointer.ts). Plain JavaScript, so the same file runs from
// src/ under the tests and from dist/ after the build (tsc copies it, and checks it: allowJs).
import fs from 'node:fs';
import { clearTimeout, setTimeout } from 'node:timers';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

if (!parentPort) throw new Error('checkpoint-worker.js runs only as a worker thread');
const port = parentPort;
/** @type {{ file: string; intervalMs: number; truncateAboveBytes: number }} */
const { file, intervalMs, truncateAboveBytes } = workerData;
const db = new Database(file);
/** @param {number} ms */
const busyTimeout = (ms) => db.pragma(`busy_timeout = ${ms}`);
busyTimeout(1000);
const walSize = () => {
  try {
    return fs.statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
};
/** @type {NodeJS.Timeout | undefined} */
let timer;
const pass = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    // A PASSIVE checkpoint reuses the WAL from its start but never shrinks the file. Past the
    // bound, TRUNCATE empties it, without waiting: a reader still in the WAL or a writer makes it
    // answer busy at once, and a later pass tries again.
    if (walSize() > truncateAboveBytes) {
      busyTimeout(0);
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        busyTimeout(1000);
      }
    }
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
