/**
 * Issue 3 benchmarks, one run, 127.0.0.1 only, each phase bounded in time:
 * (a) send vs a bare Fastify POST + one SQLite insert; (b) end-to-end msg/s with 4 producers
 * and 4 consumers (receive max=100, batch ack), single sends and send-batch; (c) send → waiting
 * long-poll latency on SQLite and PostgreSQL; (d) receive+ack rate with 100,000 pending vs 1,000.
 */
import http from 'node:http';
import { postgresTestUrl } from '../test/helpers/database.js';
import { compare, fmt, machine, percentile, record, startBaseline, startSwitchboard, type SwitchboardProcess } from './lib.js';

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response shapes are read ad hoc
type Json = any;

function call(url: string, method: string, key: string, body?: unknown): Promise<{ status: number; json: Json }> {
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

/** Producers send (singly or in batches), consumers receive max=100 and batch-ack, for `seconds`. */
async function endToEnd(server: SwitchboardProcess, seconds: number, batch: number): Promise<number> {
  const until = Date.now() + seconds * 1000;
  const producerKey = await agentKey(server, `producer-${batch}`);
  const consumers = await Promise.all([0, 1, 2, 3].map(async (i) => ({ id: `e2e-${batch}-${i}`, key: await agentKey(server, `e2e-${batch}-${i}`) })));
  let consumed = 0;
  const producers = consumers.map(async ({ id }) => {
    while (Date.now() < until) {
      if (batch === 1) {
        await call(`${server.url}/api/v1/messaging/send`, 'POST', producerKey, { destination: id, event_name: 'e2e', payload: { x: 1 } });
      } else {
        const messages = Array.from({ length: batch }, () => ({ destination: id, event_name: 'e2e', payload: { x: 1 } }));
        await call(`${server.url}/api/v1/messaging/send-batch`, 'POST', producerKey, { messages });
      }
    }
  });
  const consumerLoops = consumers.map(async ({ id, key }) => {
    while (Date.now() < until) {
      const res = await call(`${server.url}/api/v1/messaging/receive?agent_id=${id}&max=100&timeout=1`, 'GET', key);
      const ids = (res.json.data.messages as { message_id: string }[]).map((m) => m.message_id);
      if (ids.length === 0) continue;
      await call(`${server.url}/api/v1/messaging/acknowledge`, 'POST', key, { message_ids: ids });
      if (Date.now() < until) consumed += ids.length;
    }
  });
  await Promise.all([...producers, ...consumerLoops]);
  return consumed / seconds;
}

/** ms from a send to the response of a receive that was already waiting. */
async function wakeLatency(server: SwitchboardProcess, samples: number): Promise<{ p50: number; p99: number }> {
  const key = await agentKey(server, 'latency');
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const waiting = call(`${server.url}/api/v1/messaging/receive?agent_id=latency&timeout=5`, 'GET', key).then((res) => ({
      at: performance.now(),
      ids: (res.json.data.messages as { message_id: string }[]).map((m) => m.message_id),
    }));
    await new Promise((r) => setTimeout(r, 5));
    const sentAt = performance.now();
    await call(`${server.url}/api/v1/messaging/send`, 'POST', server.adminKey, { destination: 'latency', event_name: 'ping' });
    const received = await waiting;
    times.push(received.at - sentAt);
    await call(`${server.url}/api/v1/messaging/acknowledge`, 'POST', key, { message_ids: received.ids });
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** Receive+ack rate (msg/s) while draining `drain` messages from a backlog of `pending`. */
async function backlogRate(server: SwitchboardProcess, pending: number, drain: number): Promise<number> {
  const id = `backlog-${pending}`;
  const key = await agentKey(server, id);
  for (let sent = 0; sent < pending; sent += 500) {
    const messages = Array.from({ length: Math.min(500, pending - sent) }, () => ({ destination: id, event_name: 'backlog', payload: { x: 1 } }));
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

export default async function messaging(): Promise<void> {
  const lines = [
    '## Messaging (issue 3)',
    '',
    `Machine: ${machine()}. Command: \`npm run build && npm run bench -- messaging\` (${new Date().toISOString().slice(0, 10)}).`,
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

    // (b) end to end
    const single = await endToEnd(server, 8, 1);
    const batched = await endToEnd(server, 8, 500);
    lines.push(
      '### (b) end-to-end messages/s, 4 producers → 4 consumers (receive max=100, batch ack), 8 s each, SQLite',
      '',
      `- single sends: **${fmt(single)} msg/s** (target ≥ 5,000)`,
      `- send-batch of 500: **${fmt(batched)} msg/s** (target ≥ 20,000)`,
      '',
    );

    // (c) wake-up latency, SQLite
    const sqliteLatency = await wakeLatency(server, 300);
    // (d) backlog insensitivity, SQLite
    const small = await backlogRate(server, 1_000, 1_000);
    const large = await backlogRate(server, 100_000, 10_000);
    lines.push(
      '### (c) send → waiting long-poll response latency (300 samples)',
      '',
      `- SQLite: p50 **${fmt(sqliteLatency.p50, 2)} ms**, p99 **${fmt(sqliteLatency.p99, 2)} ms** (targets p50 ≤ 1 ms, p99 ≤ 5 ms)`,
    );
    let pgLines: string[] = [];
    if (postgresTestUrl()) {
      const pg = await startSwitchboard({ dialect: 'postgres' });
      try {
        const pgLatency = await wakeLatency(pg, 300);
        lines.push(`- PostgreSQL: p50 **${fmt(pgLatency.p50, 2)} ms**, p99 **${fmt(pgLatency.p99, 2)} ms** (target p50 ≤ 3 ms)`);
        const pgSmall = await backlogRate(pg, 1_000, 1_000);
        const pgLarge = await backlogRate(pg, 100_000, 10_000);
        pgLines = [`- PostgreSQL: ${fmt(pgSmall)} msg/s with 1,000 pending, ${fmt(pgLarge)} msg/s with 100,000 pending: **${fmt((pgLarge / pgSmall) * 100, 1)}%**`];
      } finally {
        await pg.stop();
      }
    } else {
      lines.push('- PostgreSQL: not measured (SWITCHBOARD_TEST_DATABASE_URL unset)');
    }
    lines.push(
      '',
      '### (d) receive + ack rate by backlog (4 consumers, max=100, batch ack; drains 1,000 of 1,000 and 10,000 of 100,000); target ≥ 80%',
      '',
      `- SQLite: ${fmt(small)} msg/s with 1,000 pending, ${fmt(large)} msg/s with 100,000 pending: **${fmt((large / small) * 100, 1)}%**`,
      ...pgLines,
      '',
      '(e) the pg-boss and raw SKIP LOCKED comparisons are not measured yet.',
    );
  } finally {
    await server.stop();
    await baseline.stop();
    agent.destroy();
  }
  record('messaging', lines.join('\n'));
  console.log(lines.join('\n'));
}
