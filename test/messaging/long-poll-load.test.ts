import { spawn } from 'node:child_process';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const POLLS = 2000;
const WAIT_S = 2;

/**
 * Another process, like real clients: opens POLLS long polls at once (no connection limit), retries
 * a poll whose connection was reset (the listen backlog overflows while 2,000 connect), and prints
 * the status codes it got.
 */
const CLIENT = `
const http = require('node:http');
const { BASE_URL, KEY, POLLS, WAIT_S } = process.env;
const agent = new http.Agent({ maxSockets: Infinity });
const codes = {};
let left = Number(POLLS);
const poll = (retries) => {
  http
    .get(BASE_URL + '/api/v1/messaging/receive?timeout=' + WAIT_S, { agent, headers: { authorization: 'Bearer ' + KEY } }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode));
    })
    .on('error', (err) => (retries > 0 ? poll(retries - 1) : done(err.code)));
};
const done = (code) => {
  codes[code] = (codes[code] || 0) + 1;
  if (--left === 0) process.stdout.write(JSON.stringify(codes), () => process.exit(0));
};
for (let i = 0; i < Number(POLLS); i++) poll(3);
`;

function timedGet(url: string, agent: http.Agent): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        res.resume();
        res.once('end', () => resolve(performance.now() - started));
      })
      .once('error', reject);
  });
}

// Issue 20 item 4: opening 2,000 long polls at once stopped the event loop for 1–1.9 s. The
// server runs in this process, so its event-loop delay is measured directly while a child
// process opens the polls; they all time out after WAIT_S, together, inside the window too.
// /healthz is asked every 10 ms meanwhile. The bound is generous for a 2-core machine shared
// with other work: before the fix the longest stall was 1.4–3.3 s (both backends), after it
// 0.25–0.8 s with the machine at a load of 8–10, ~0.1 s when quiet.
describeEachDialect('messaging: 2,000 long polls opened at once', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_RATE_LIMIT: '0' } });

  it('stop neither the event loop nor /healthz for a second', async () => {
    const crowd = await server.agent('crowd');
    const probe = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const healthz = `${server.url}/healthz`;
    try {
      await timedGet(healthz, probe);
      const client = spawn(process.execPath, ['-e', CLIENT], {
        env: { BASE_URL: server.url, KEY: crowd.key!, POLLS: String(POLLS), WAIT_S: String(WAIT_S) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let output = '';
      client.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      let finished = false;
      const exited = new Promise<number | null>((resolve) => client.once('exit', resolve)).finally(() => (finished = true));

      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const latencies: number[] = [];
      while (!finished) {
        latencies.push(await timedGet(healthz, probe));
        // The probe's pace, not a wait for something (the loop ends when the client exits).
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      delay.disable();

      expect(await exited).toBe(0);
      expect(JSON.parse(output)).toEqual({ 200: POLLS });
      latencies.sort((a, b) => a - b);
      const figures = {
        probes: latencies.length,
        healthzP99Ms: Math.round(latencies[Math.floor(latencies.length * 0.99)]!),
        healthzMaxMs: Math.round(latencies.at(-1)!),
        loopMaxMs: Math.round(delay.max / 1e6),
      };
      const measured = `[${dialect}] ${POLLS} long polls opened at once: ${JSON.stringify(figures)}`;
      expect(figures.loopMaxMs, measured).toBeLessThan(1000);
      expect(figures.healthzMaxMs, measured).toBeLessThan(1000);
    } finally {
      probe.destroy();
    }
  }, 60_000);
});
