/**
 * Issue 2: an authenticated read (GET /api/v1/auth/keys?limit=1, admin key: auth lookup, rate
 * limiter, envelope, SQLite query) against a bare Fastify hello-world, 50 connections.
 * Target: ≥ 60% of the baseline's requests/s, p99 ≤ 10 ms. A bare route running the same two queries
 * without auth is measured too, as the reference for what the read alone costs here.
 */
import os from 'node:os';
import path from 'node:path';
import { compare, fmt, freePort, load, machine, record, startBaseline, startSwitchboard } from './lib.js';

export default async function foundation(): Promise<void> {
  const baseline = await startBaseline('hello.ts');
  const server = await startSwitchboard({ dialect: 'sqlite' });
  try {
    const { a, b } = await compare(
      { url: `${baseline.url}/`, connections: 50, duration: 10, serverCpuMs: baseline.cpuMs },
      {
        url: `${server.url}/api/v1/auth/keys?limit=1`,
        headers: { authorization: `Bearer ${server.adminKey}` },
        connections: 50,
        duration: 10,
        serverCpuMs: server.cpuMs,
      },
    );
    if (b.non2xx > 0 || b.errors > 0) throw new Error(`switchboard answered ${b.non2xx} non-2xx and ${b.errors} errors`);
    // The same two queries on the same file from a bare route without auth: what the read alone
    // leaves of hello-world's rate on this machine (a SQLite call between network events costs
    // several times what it does in a tight loop: ~30 µs per request for one count(*), measured).
    const bareRead = await startBaseline('sqlite-keys.ts', { BASELINE_DB: path.join(server.database.dataDir, 'switchboard.db') });
    const read = await load({ url: `${bareRead.url}/?limit=1`, connections: 50, duration: 10, serverCpuMs: bareRead.cpuMs });
    await bareRead.stop();
    if (read.non2xx > 0 || read.errors > 0) throw new Error(`the bare read answered ${read.non2xx} non-2xx and ${read.errors} errors`);
    // The access log: a line for every request (debug) against none (warn). At info, the default,
    // only refused, failed and slow requests write one: none of these reads.
    const verbose = await startSwitchboard({ dialect: 'sqlite', env: { SWITCHBOARD_LOG_LEVEL: 'debug' } });
    const quiet = await startSwitchboard({
      dialect: 'sqlite',
      env: { SWITCHBOARD_LOG_LEVEL: 'warn', SWITCHBOARD_PORT: String(await freePort()) },
    });
    const authenticatedRead = (target: typeof server) => ({
      url: `${target.url}/api/v1/auth/keys?limit=1`,
      headers: { authorization: `Bearer ${target.adminKey}` },
      connections: 50,
      duration: 10,
      serverCpuMs: target.cpuMs,
    });
    const logged = await compare(authenticatedRead(verbose), authenticatedRead(quiet)).finally(() =>
      Promise.all([verbose.stop(), quiet.stop()]),
    );
    const ratio = b.rps / a.rps;
    const lines = [
      '## Foundation (issue 2): authenticated read vs bare Fastify',
      '',
      `Machine: ${machine()}. Command: \`npm run build && npm run bench -- foundation\` (${new Date().toISOString().slice(0, 10)}).`,
      'Each side: 2 s warm-up, then 2 interleaved rounds of 10 s at 50 connections; medians.',
      '',
      '| target | req/s | p50 ms | p99 ms | server CPU µs/request |',
      '|---|---:|---:|---:|---:|',
      `| bare Fastify hello-world | ${fmt(a.rps)} | ${a.p50} | ${a.p99} | ${fmt(a.cpuUs ?? NaN)} |`,
      `| GET /api/v1/auth/keys?limit=1 (admin key, SQLite) | ${fmt(b.rps)} | ${b.p50} | ${b.p99} | ${fmt(b.cpuUs ?? NaN)} |`,
      `| reference: bare Fastify GET, the same two queries on the same file, no auth (one 10 s run after) | ${fmt(read.rps)} | ${read.p50} | ${read.p99} | ${fmt(read.cpuUs ?? NaN)} |`,
      '',
      `Ratio: **${fmt(ratio * 100, 1)}%** of the baseline's requests/s (target ≥ 60%); p99 ${b.p99} ms (target ≤ 10 ms).`,
      `The bare route doing the same read reaches ${fmt((read.rps / a.rps) * 100, 1)}% of hello-world; ours reaches ${fmt((b.rps / read.rps) * 100, 1)}% of it.`,
      `Access log (issue 25): the same read with a log line for every request (SWITCHBOARD_LOG_LEVEL=debug) ${fmt(logged.a.rps)} req/s at ${fmt(logged.a.cpuUs ?? NaN)} µs CPU per request, without (warn) ${fmt(logged.b.rps)} req/s at ${fmt(logged.b.cpuUs ?? NaN)} µs: ${fmt((logged.a.rps / logged.b.rps) * 100, 1)}% of the req/s, over the 5% the issue allows, so at info (the default) only refused, failed and slow (≥ 1 s) requests write their line: the table's read above runs at info and writes none. 2 interleaved rounds of 10 s, medians.`,
      `CPU per request: the baseline's is ${fmt(((a.cpuUs ?? NaN) / (b.cpuUs ?? NaN)) * 100, 1)}% of ours (the ceiling of the req/s ratio when the server is the bottleneck; it moves little with other load). 1-minute load average at the end: ${os.loadavg()[0]!.toFixed(2)}.`,
    ];
    record('foundation', lines.join('\n'));
    console.log(lines.join('\n'));
  } finally {
    await server.stop();
    await baseline.stop();
  }
}
