/**
 * Issue 24, two parts. (a) Messaging end to end against 1, 2 and 3 nodes on one PostgreSQL
 * database: 4 producers and 4 consumers spread over the nodes (a consumer never on its
 * producer's node when there are several, so every wake-up crosses nodes), messages acked per
 * second and the CPU the database's backends spent per message (read from /proc for the
 * postgres processes serving this bench's database: its name is in their command line). On a
 * 2-core machine the nodes share the cores, so the figure that matters is that the database's
 * cost per message does not grow with the number of nodes (target: 3 nodes ≤ 1.2× 1 node).
 * (b) What the cluster-wide request budget costs. Two servers on one PostgreSQL database,
 * one with the shared budget (slices leased from `rate_limit_windows`), one with node-local
 * counters (SWITCHBOARD_BENCH_SHARED_RATE_LIMIT=off), driven in turn with authenticated GETs of
 * one key at 50 connections. The budget is 100,000 per 1 s window, so a slice is 1,000 requests:
 * several leases a second and a new window (whose first request waits for its lease) every second,
 * far more leasing than the default 6,000 a minute would cause.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { compare, fmt, machine, median, record, startSwitchboard } from './lib.js';
import { createTestDatabase, type TestDatabase } from '../test/helpers/database.js';
import { call } from './messaging.js';
import { backendCpuMs, type SwitchboardProcess } from './lib.js';

const E2E_SECONDS = 10;

/** 4 producers → 4 consumers over `nodes` for `seconds`: messages acked per second and database CPU µs per message. */
async function endToEnd(
  nodes: SwitchboardProcess[],
  adminKey: string,
  dbName: string,
  seconds: number,
): Promise<{ rate: number; dbUs: number; nodeUs: number }> {
  const run = randomBytes(4).toString('hex');
  const destinations = [0, 1, 2, 3].map((i) => `cl-${run}-${i}`);
  const keyOf = new Map<string, string>();
  for (const d of [...destinations, `producer-${run}`]) {
    keyOf.set(d, (await call(`${nodes[0]!.url}/api/v1/auth/keys`, 'POST', adminKey, { agent_id: d })).json.data.key);
  }
  const producerKey = keyOf.get(`producer-${run}`)!;
  const until = Date.now() + seconds * 1000;
  let consumed = 0;
  const dbBefore = backendCpuMs(dbName);
  const nodesBefore = nodes.reduce((sum, n) => sum + n.cpuMs(), 0);
  const producers = destinations.map(async (destination, i) => {
    const node = nodes[i % nodes.length]!;
    while (Date.now() < until)
      await call(`${node.url}/api/v1/messaging/send`, 'POST', producerKey, { destination, event_name: 'e2e', payload: { x: 1 } });
  });
  const consumers = destinations.map(async (destination, i) => {
    const node = nodes[(i + 1) % nodes.length]!;
    const key = keyOf.get(destination)!;
    while (Date.now() < until) {
      const res = await call(`${node.url}/api/v1/messaging/receive?agent_id=${destination}&max=100&timeout=1`, 'GET', key);
      const ids = (res.json.data.messages as { message_id: string }[]).map((m) => m.message_id);
      if (ids.length === 0) continue;
      await call(`${node.url}/api/v1/messaging/acknowledge`, 'POST', key, { message_ids: ids });
      if (Date.now() < until) consumed += ids.length;
    }
  });
  await Promise.all([...producers, ...consumers]);
  const dbMs = backendCpuMs(dbName) - dbBefore;
  const nodeMs = nodes.reduce((sum, n) => sum + n.cpuMs(), 0) - nodesBefore;
  return { rate: consumed / seconds, dbUs: (dbMs * 1000) / Math.max(1, consumed), nodeUs: (nodeMs * 1000) / Math.max(1, consumed) };
}

async function messagingAcrossNodes(): Promise<string[]> {
  const rows: string[] = [];
  const results: { n: number; rate: number; dbUs: number; nodeUs: number }[] = [];
  for (const n of [1, 2, 3]) {
    const database: TestDatabase = await createTestDatabase('postgres');
    const dbName = new URL(database.databaseUrl!).pathname.slice(1);
    const adminKey = `sk_bench_${randomBytes(16).toString('hex')}`;
    const nodes: SwitchboardProcess[] = [];
    try {
      for (let i = 0; i < n; i++) nodes.push(await startSwitchboard({ database, env: { SWITCHBOARD_ADMIN_KEY: adminKey } }));
      await endToEnd(nodes, adminKey, dbName, 2);
      const runs = [await endToEnd(nodes, adminKey, dbName, E2E_SECONDS), await endToEnd(nodes, adminKey, dbName, E2E_SECONDS)];
      const pick = (f: (r: (typeof runs)[number]) => number) => median(runs.map(f));
      const result = { n, rate: pick((r) => r.rate), dbUs: pick((r) => r.dbUs), nodeUs: pick((r) => r.nodeUs) };
      results.push(result);
      rows.push(`| ${n} | ${fmt(result.rate)} | ${fmt(result.dbUs)} | ${fmt(result.nodeUs)} |`);
    } finally {
      for (const node of nodes) await node.stop();
      await database.drop();
    }
  }
  const ratio = results[2]!.dbUs / results[0]!.dbUs;
  return [
    '### (a) messaging end to end across nodes',
    '',
    `4 producers (single sends) → 4 consumers (receive max=100, timeout=1, batch ack), spread over the nodes (a consumer on another node than its producer when there are several); a fresh database per row; 2 s warm-up, then 2 runs of ${E2E_SECONDS} s, medians. Database CPU: the postgres backends of the bench's database, from /proc.`,
    '',
    '| nodes | msgs/s | database CPU µs/msg | nodes CPU µs/msg (all nodes) |',
    '|---:|---:|---:|---:|',
    ...rows,
    '',
    `Database CPU per message with 3 nodes: **${fmt(ratio, 2)}×** that of 1 node (target ≤ 1.2×). The nodes share the machine's 2 cores with the database and the load generator, so msgs/s does not grow with nodes here.`,
    '',
  ];
}

export default async function cluster(): Promise<void> {
  if (!process.env.SWITCHBOARD_TEST_DATABASE_URL) throw new Error('the cluster bench needs SWITCHBOARD_TEST_DATABASE_URL (PostgreSQL)');
  const messagingLines = await messagingAcrossNodes();
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
    for (const [name, r] of [
      ['local', a],
      ['shared', b],
    ] as const) {
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx and ${r.errors} errors`);
    }
    const lines = [
      '## Cluster (issue 24)',
      '',
      `Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://… npm run bench -- cluster\` (${new Date().toISOString().slice(0, 10)}).`,
      '',
      ...messagingLines,
      '### (b) the shared request budget',
      '',
      "Two servers on one PostgreSQL database, `GET /api/v1/auth/whoami` with one admin key (cached: no query besides the budget's),",
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
    record('cluster', lines.join('\n'));
    console.log(lines.join('\n'));
  } finally {
    await local.stop();
    await shared.stop();
    await database.drop();
  }
}
