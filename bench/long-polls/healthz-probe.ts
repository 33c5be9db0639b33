/**
 * The /healthz probe of bench/long-polls.ts, in a process of its own so that neither the server's
 * nor the load generator's event loop is in its figures. Asks `GET <argv[2]>/healthz` over one
 * keep-alive connection, INTERVAL_MS after each answer; says 'ready' after the first answer and,
 * once the parent sends 'report', sends back every sample as [start, latency] pairs (epoch ms, ms)
 * and exits.
 */
import http from 'node:http';

const INTERVAL_MS = 10;
/** Bounds the run should the parent never ask: 10 minutes of samples. */
const MAX_SAMPLES = 60_000;

const target = new URL('/healthz', process.argv[2]);
if (target.hostname !== '127.0.0.1') throw new Error('the probe only asks 127.0.0.1');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const samples: [number, number][] = [];
let errors = 0;
let stopped = false;

const now = () => performance.timeOrigin + performance.now();

function ask(): Promise<void> {
  const started = now();
  return new Promise((resolve) => {
    http
      .get(target, { agent }, (res) => {
        res.resume();
        res.once('end', () => {
          if (res.statusCode === 200) samples.push([started, now() - started]);
          else errors++;
          resolve();
        });
      })
      .once('error', () => {
        errors++;
        resolve();
      });
  });
}

process.on('message', (message) => {
  if (message === 'report') stopped = true;
});

while (!stopped && samples.length + errors < MAX_SAMPLES) {
  await ask();
  if (samples.length + errors === 1) process.send!('ready');
  await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS));
}
agent.destroy();
process.send!({ samples, errors }, () => process.exit(0));
