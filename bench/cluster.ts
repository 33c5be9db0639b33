/**
 * Issue 24: what the cluster-wide request budget costs. Two servers on one PostgreSQL database,
 * one with the shared budget (slices leased from `rate_limit_windows`), one with node-local
 * counters (SWITCHBOARD_BENCH_SHARED_RATE_LIMIT=off), driven in turn with authenticated GETs of
 * one key at 50 connections. The budget is 100,000 per 1 s window, so a slice is 1,000 requests:
 * several leases a second and a new window (whose first request waits for its lease) every second,
 * far more leasing than the default 6,000 a minute would cause.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { compare, fmt, machine, record, startSwitchboard } from './lib.js';
import { createTestDatabase } from '../test/helpers/database.js';

export default async function cluster(): Promise<void> {
  if (!process.env.SWITCHBOARD_TEST_DATABASE_URL) throw new Error('the cluster bench needs SWITCHBOARD_TEST_DATABASE_URL (PostgreSQL)');
  const database = await createTestDatabase('postgres');
  // One admin key for both: a node started with another one would revoke it (one bootstrap key per cluster).
  const adminKey = `sk_bench_${randomBytes(16).toString('hex')}`;
  const budget = { SWITCHBOARD_RATE_LIMIT: '100000', SWITCHBOARD_RATE_WINDOW_S: '1', SWITCHBOARD_ADMIN_KEY: adminKey };
  const shared = await startSwitchboard({ database, env: budget });
  const local = await startSwitchboard({ database, env: { ...budget, SWITCHBOARD_BENCH_SHARED_RATE_LIMIT: 'off' } });
  try {
    const request = (server: typeof shared) => ({
      url: `${server.url}/api/v1/auth/whoami`,
      headers: { authorization: `Bearer ${adminKey}` },
      connections: 50,
      duration: 10,
      serverCpuMs: server.cpuMs,
    });
    const { a, b } = await compare(request(local), request(shared));
    for (const [name, r] of [['local', a], ['shared', b]] as const) {
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx and ${r.errors} errors`);
    }
    const lines = [
      '## Cluster (issue 24): the shared request budget',
      '',
      `Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://… npm run bench -- cluster\` (${new Date().toISOString().slice(0, 10)}).`,
      'Two servers on one PostgreSQL database, `GET /api/v1/auth/whoami` with one admin key (cached: no query besides the budget\'s),',
      '50 connections; budget 100,000 per 1 s window (slices of 1,000: several leases and a new window every second). Each side:',
      '2 s warm-up, then 2 interleaved rounds of 10 s; medians.',
      '',
      '| budget | req/s | p50 ms | p99 ms | server CPU µs/request |',
      '|---|---:|---:|---:|---:|',
      `| node-local (in memory) | ${fmt(a.rps)} | ${a.p50} | ${a.p99} | ${fmt(a.cpuUs ?? NaN)} |`,
      `| cluster-wide (leased slices) | ${fmt(b.rps)} | ${b.p50} | ${b.p99} | ${fmt(b.cpuUs ?? NaN)} |`,
      '',
      `Shared/local: **${fmt((b.rps / a.rps) * 100, 1)}%** of the requests/s, ${fmt(((b.cpuUs ?? NaN) / (a.cpuUs ?? NaN)) * 100, 1)}% of the CPU per request.`,
      `1-minute load average at the end: ${os.loadavg()[0]!.toFixed(2)}.`,
    ];
    record('cluster-rate-limit', lines.join('\n'));
    console.log(lines.join('\n'));
  } finally {
    await local.stop();
    await shared.stop();
    await database.drop();
  }
}
