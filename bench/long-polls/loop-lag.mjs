/**
 * Preloaded into the server by bench/long-polls.ts (`node --import`), so that its event loop is
 * measured without touching src/: a 10 ms timer notes each tick as [epoch ms it was due, ms it
 * came late], and the samples go to $LOOP_LAG_FILE when the process exits.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setInterval } from 'node:timers';

const INTERVAL_MS = 10;
const file = process.env.LOOP_LAG_FILE;
if (file) {
  const samples = [];
  let last = performance.now();
  setInterval(() => {
    const at = performance.now();
    samples.push([performance.timeOrigin + last + INTERVAL_MS, at - last - INTERVAL_MS]);
    last = at;
  }, INTERVAL_MS).unref();
  process.on('exit', () => fs.writeFileSync(file, JSON.stringify(samples)));
}
