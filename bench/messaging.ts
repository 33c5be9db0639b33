/**
 * Issue 3 benchmarks, one run, 127.0.0.1 only, each phase bounded in time:
 * (a) send vs a bare Fastify POST + one SQLite insert; (b) end-to-end msg/s with 4 producers
 * and 4 consumers (receive max=100, batch ack), single sends and send-batch; (c) send → waiting
 * long-poll latency on SQLite and PostgreSQL; (d) receive+ack rate with 100,000 pending vs 1,000;
 * (e) the end-to-end loop of (b) on PostgreSQL next to pg-boss and a raw SKIP LOCKED loop.
 * Tracing's cost on the loop of (b) is its own suite, bench/tracing.ts.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import { createTestDatabase, postgresTestUrl } from '../test/helpers/database.js';
import { PG_BOSS_VERSION, pgBossQueue, skipLockedQueue, type QueueClient } from './baselines/pg-queues.js';
import { compare, fmt, machine, median, percentile, record, startBaseline, startSwitchboard, type SwitchboardProcess } from './lib.js';

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response shapes are read ad hoc
export type Json = any;

export function call(url: string, method: string, key: string, body?: unknown): Promise<{ status: number; json: Json }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${key}`,
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

async function agentKey(server: SwitchboardProcess, agentId: string): Promise<string> {
  const res = await call(`${server.url}/api/v1/auth/keys`, 'POST', server.adminKey, { agent_id: agentId });
  return res.json.data.key as string;
}

/** Switchboard's HTTP API as a QueueClient: one agent key per destination, long-poll receive. */
export function switchboardQueue(server: SwitchboardProcess, name: string): QueueClient {
  const keys = new Map<string, string>();
  let producerKey: string | undefined;
  const keyOf = (destination: string) => keys.get(destination)!;
  return {
    name,
    async prepare(destination) {
      producerKey ??= await agentKey(server, `producer-${randomUUID()}`);
      keys.set(destination, await agentKey(server, destination));
    },
    async send(destination, count) {
      if (count === 1) {
        await call(`${server.url}/api/v1/messaging/send`, 'POST', producerKey!, { destination, event_name: 'e2e', payload: { x: 1 } });
      } else {
        const messages = Array.from({ length: count }, () => ({ destination, event_name: 'e2e', payload: { x: 1 } }));
        await call(`${server.url}/api/v1/messaging/send-batch`, 'POST', producerKey!, { messages });
      }
    },
    async receive(destination, max) {
      const res = await call(
        `${server.url}/api/v1/messaging/receive?agent_id=${destination}&max=${max}&timeout=1`,
        'GET',
        keyOf(destination),
      );
      return (res.json.data.messages as { message_id: string }[]).map((m) => m.message_id);
    },
    async ack(destination, ids) {
      await call(`${server.url}/api/v1/messaging/acknowledge`, 'POST', keyOf(destination), { message_ids: ids });
    },
    close: async () => undefined,
  };
}

/**
 * 4 producers, each sending to its own destination (singly or in batches of `batch`), and 4
 * consumers, one per destination, receiving max=100 and acking each batch at once, for
 * `seconds`; returns the messages acked per second.
 */
export async function endToEnd(queue: QueueClient, seconds: number, batch: number): Promise<number> {
  const run = randomUUID().slice(0, 8);
  const destinations = [0, 1, 2, 3].map((i) => `e2e-${batch}-${run}-${i}`);
  for (const destination of destinations) await queue.prepare(destination);
  const until = Date.now() + seconds * 1000;
  let consumed = 0;
  const producers = destinations.map(async (destination) => {
    while (Date.now() < until) await queue.send(destination, batch);
  });
  const consumers = destinations.map(async (destination) => {
    while (Date.now() < until) {
      const ids = await queue.receive(destination, 100);
      if (ids.length === 0) continue;
      await queue.ack(destination, ids);
      if (Date.now() < until) consumed += ids.length;
    }
  });
  await Promise.all([...producers, ...consumers]);
  return consumed / seconds;
}

/**
 * Runs endToEnd for each queue, batch 1 and `batch`, after a short warm-up of each, in
 * `rounds` interleaved rounds; returns the median msg/s per queue and batch size.
 */
async function compareQueues(
  queues: QueueClient[],
  seconds: number,
  batch: number,
  rounds = 2,
): Promise<Map<string, { single: number; batched: number }>> {
  for (const queue of queues) {
    await endToEnd(queue, 1, 1);
    await endToEnd(queue, 1, batch);
  }
  const samples = new Map(queues.map((q) => [q.name, { single: [] as number[], batched: [] as number[] }]));
  for (let round = 0; round < rounds; round++) {
    for (const queue of queues) {
      samples.get(queue.name)!.single.push(await endToEnd(queue, seconds, 1));
      samples.get(queue.name)!.batched.push(await endToEnd(queue, seconds, batch));
    }
  }
  return new Map([...samples].map(([name, s]) => [name, { single: median(s.single), batched: median(s.batched) }]));
}

/** ms from a send to the response of a receive that was already waiting. */
/**
 * Send → waiting long-poll latency, and for scale the round trip of one authenticated GET after
 * the same 5 ms pause: the floor of any request here, where both processes sleep in between.
 */
async function wakeLatency(server: SwitchboardProcess, samples: number): Promise<{ p50: number; p99: number; floorP50: number }> {
  const key = await agentKey(server, 'latency');
  const times: number[] = [];
  const floor: number[] = [];
  const pause = () => new Promise((r) => setTimeout(r, 5));
  for (let i = 0; i < samples; i++) {
    const waiting = call(`${server.url}/api/v1/messaging/receive?agent_id=latency&timeout=5`, 'GET', key).then((res) => ({
      at: performance.now(),
      ids: (res.json.data.messages as { message_id: string }[]).map((m) => m.message_id),
    }));
    await pause();
    const sentAt = performance.now();
    await call(`${server.url}/api/v1/messaging/send`, 'POST', server.adminKey, { destination: 'latency', event_name: 'ping' });
    const received = await waiting;
    times.push(received.at - sentAt);
    await call(`${server.url}/api/v1/messaging/acknowledge`, 'POST', key, { message_ids: received.ids });
    await pause();
    const askedAt = performance.now();
    await call(`${server.url}/api/v1/auth/whoami`, 'GET', key);
    floor.push(performance.now() - askedAt);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99), floorP50: percentile(floor, 50) };
}

/** Receive+ack rate (msg/s) while draining `drain` messages from a backlog of `pending`. */
async function backlogRate(server: SwitchboardProcess, pending: number, drain: number): Promise<number> {
  const id = `backlog-${pending}`;
  const key = await agentKey(server, id);
  for (let sent = 0; sent < pending; sent += 500) {
    const messages = Array.from({ length: Math.min(500, pending - sent) }, () => ({
      destination: id,
      event_name: 'backlog',
      payload: { x: 1 },
    }));
    await call(`${server.url}/api/v1/messaging/send-batch`, 'POST', server.adminKey, { messages });
  }
  const started = performance.now();
  let done = 0;
  await Promise.all(
    [0, 1, 2, 3].map(async () => {
      while (done < drain) {
        const res = await call(`${server.url}/api/v1/messaging/receive?agent_id=${id}&max=100`, 'GET', key);
        const ids = (res.json.data.messages as { message_id: string }[]).map((m) => m.message_id);
        if (ids.length === 0) break;
        await call(`${server.url}/api/v1/messaging/acknowledge`, 'POST', key, { message_ids: ids });
        done += ids.length;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

export const E2E_SECONDS = 6;
export const SEND_BATCH = 500;

export default async function messaging(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const lines = [
    '## Messaging (issue 3)',
    '',
    `Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test flock /tmp/switchboard-bench.lock npm run bench -- messaging\` (${new Date().toISOString().slice(0, 10)}).`,
    '',
  ];

  // (a) send vs bare insert route
  const baseline = await startBaseline('sqlite-insert.ts');
  const server = await startSwitchboard({ dialect: 'sqlite' });
  try {
    const key = await agentKey(server, 'bench-sender');
    const body = JSON.stringify({ destination: 'bench-sink', event_name: 'bench', payload: { n: 1, text: 'hello' } });
    const { a, b } = await compare(
      { url: `${baseline.url}/`, method: 'POST', body, headers: { 'content-type': 'application/json' }, connections: 50, duration: 8 },
      {
        url: `${server.url}/api/v1/messaging/send`,
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        connections: 50,
        duration: 8,
      },
    );
    lines.push(
      '### (a) send throughput vs a bare POST + one SQLite insert (50 connections, 2 s warm-up, 2 interleaved 8 s rounds, medians)',
      '',
      '| target | req/s | p50 ms | p99 ms |',
      '|---|---:|---:|---:|',
      `| bare Fastify POST + 1 SQLite insert | ${fmt(a.rps)} | ${a.p50} | ${a.p99} |`,
      `| POST /api/v1/messaging/send (agent key, SQLite) | ${fmt(b.rps)} | ${b.p50} | ${b.p99} |`,
      '',
      `Ratio: **${fmt((b.rps / a.rps) * 100, 1)}%** of the reference's requests/s (target ≥ 80%); p99 ${fmt(b.p99 / Math.max(a.p99, 1), 2)}× the reference's (target ≤ 2×).`,
      '',
    );
    await baseline.stop();

    // (b) end to end
    const sqliteE2e = (await compareQueues([switchboardQueue(server, 'switchboard')], E2E_SECONDS, SEND_BATCH)).get('switchboard')!;
    lines.push(
      `### (b) end-to-end messages/s, 4 producers → 4 consumers (receive max=100 with timeout=1, batch ack), SQLite (1 s warm-up, 2 rounds of ${E2E_SECONDS} s, medians)`,
      '',
      `- single sends: **${fmt(sqliteE2e.single)} msg/s** (target ≥ 5,000)`,
      `- send-batch of ${SEND_BATCH}: **${fmt(sqliteE2e.batched)} msg/s** (target ≥ 20,000)`,
      '',
    );

    // (c) wake-up latency, SQLite
    const sqliteLatency = await wakeLatency(server, 300);
    // (d) backlog insensitivity, SQLite
    const small = await backlogRate(server, 1_000, 1_000);
    const large = await backlogRate(server, 100_000, 10_000);
    lines.push(
      '### (c) send → waiting long-poll response latency (300 samples, each after a 5 ms pause)',
      '',
      'The chain is two requests (the send, then the answer to the long poll) and a claim. Each sample starts after a pause, and',
      'waking the sleeping server and client processes is part of every figure: the GET after the same pause is its floor.',
      '',
      `- SQLite: p50 **${fmt(sqliteLatency.p50, 2)} ms**, p99 **${fmt(sqliteLatency.p99, 2)} ms** (targets p50 ≤ 1 ms, p99 ≤ 5 ms); one GET /auth/whoami after the same pause: p50 ${fmt(sqliteLatency.floorP50, 2)} ms`,
    );
    const pgLines: string[] = [];
    const queueLines: string[] = [];
    if (postgresTestUrl()) {
      const pg = await startSwitchboard({ dialect: 'postgres' });
      try {
        const pgLatency = await wakeLatency(pg, 300);
        lines.push(
          `- PostgreSQL: p50 **${fmt(pgLatency.p50, 2)} ms**, p99 **${fmt(pgLatency.p99, 2)} ms** (target p50 ≤ 3 ms); one GET /auth/whoami after the same pause: p50 ${fmt(pgLatency.floorP50, 2)} ms`,
        );
        const pgSmall = await backlogRate(pg, 1_000, 1_000);
        const pgLarge = await backlogRate(pg, 100_000, 10_000);
        pgLines.push(
          `- PostgreSQL: ${fmt(pgSmall)} msg/s with 1,000 pending, ${fmt(pgLarge)} msg/s with 100,000 pending: **${fmt((pgLarge / pgSmall) * 100, 1)}%**`,
        );
        queueLines.push(...(await queueComparison(pg)));
      } finally {
        await pg.stop();
      }
    } else {
      lines.push('- PostgreSQL: not measured (SWITCHBOARD_TEST_DATABASE_URL unset)');
      queueLines.push('(e) not measured: SWITCHBOARD_TEST_DATABASE_URL unset.');
    }
    lines.push(
      '',
      '### (d) receive + ack rate by backlog (4 consumers, max=100, batch ack; drains 1,000 of 1,000 and 10,000 of 100,000); target ≥ 80%',
      '',
      `- SQLite: ${fmt(small)} msg/s with 1,000 pending, ${fmt(large)} msg/s with 100,000 pending: **${fmt((large / small) * 100, 1)}%**`,
      ...pgLines,
      '',
      ...queueLines,
    );
  } finally {
    await server.stop();
    await baseline.stop();
    agent.destroy();
  }
  lines.push(
    '',
    `1-minute load average ${fmt(loadBefore, 2)} at the start, ${fmt(os.loadavg()[0]!, 2)} at the end (the 2 cores are shared with other work).`,
  );
  record('messaging', lines.join('\n'));
  console.log(lines.join('\n'));
}

/** (e): the loop of (b) against Switchboard on PostgreSQL, pg-boss and a raw SKIP LOCKED loop, interleaved. */
async function queueComparison(server: SwitchboardProcess): Promise<string[]> {
  const database = await createTestDatabase('postgres');
  const queues: QueueClient[] = [];
  try {
    queues.push(
      switchboardQueue(server, 'switchboard'),
      await pgBossQueue(database.databaseUrl!),
      await skipLockedQueue(database.databaseUrl!),
    );
    const results = await compareQueues(queues, E2E_SECONDS, SEND_BATCH);
    const sb = results.get('switchboard')!;
    const boss = results.get('pg-boss')!;
    const raw = results.get('raw SKIP LOCKED')!;
    const ratio = (a: number, b: number) => `${fmt(a / b, 2)}×`;
    return [
      `### (e) PostgreSQL: the loop of (b) on Switchboard, pg-boss ${PG_BOSS_VERSION} and a raw \`FOR UPDATE SKIP LOCKED\` loop (1 s warm-up each, 2 interleaved rounds of ${E2E_SECONDS} s, medians)`,
      '',
      'pg-boss and the raw loop run in the bench process on pg pools of 10 against a fresh database on the same server;',
      'their consumers sleep 5 ms when a fetch comes back empty (neither long-polls). Switchboard is reached over HTTP.',
      '',
      `| queue | single sends msg/s | send batches of ${SEND_BATCH} msg/s |`,
      '|---|---:|---:|',
      `| Switchboard (HTTP, PostgreSQL) | ${fmt(sb.single)} | ${fmt(sb.batched)} |`,
      `| pg-boss (send / insert, fetch batchSize 100, complete ids) | ${fmt(boss.single)} | ${fmt(boss.batched)} |`,
      `| raw SKIP LOCKED (INSERT, UPDATE … LIMIT 100 SKIP LOCKED RETURNING, UPDATE ids) | ${fmt(raw.single)} | ${fmt(raw.batched)} |`,
      '',
      `Switchboard vs pg-boss: **${ratio(sb.single, boss.single)}** single, **${ratio(sb.batched, boss.batched)}** batched (target ≥ 5×);`,
      `vs the raw loop: **${fmt((sb.single / raw.single) * 100, 1)}%** single, **${fmt((sb.batched / raw.batched) * 100, 1)}%** batched (target ≥ 50%).`,
    ];
  } finally {
    for (const queue of queues) await queue.close();
    await database.drop();
  }
}
