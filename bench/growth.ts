/**
 * `npm run bench -- growth`: what the everyday operations cost as the data grows, at 10,000,
 * 100,000 and 1,000,000 rows (`GROWTH_SIZES=10000,100000` for a shorter run), on SQLite and on
 * PostgreSQL with autovacuum off (as on this machine: nothing analyzes the tables but the server).
 *
 * Per size, a fresh database holds that many pending messages in one agent's inbox, finished runs
 * of a one-step plan and events in the log. The rows are cloned in SQL from one of each made
 * through the API (through the API a million would take an hour). Then a server answers each
 * operation sequentially: p50, and the server's and the database's CPU per operation (from /proc;
 * SQLite's database work is the server's). Last, 1 KB sends through the API while the WAL is
 * sampled: its largest size, and the disk each message took.
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../test/helpers/database.js';
import { backendCpuMs, fmt, machine, median, record, startSwitchboard, type SwitchboardProcess } from './lib.js';
import type { Json } from './messaging.js';

const SIZES = (process.env.GROWTH_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const REPEATS = 101;
/** Calls of each operation before measuring: the server's code warm (each size starts a new server). */
const WARM_UP = 10;
const WAL_SENDS = 5_000;
const AGENT = 'growth-agent';

interface Figure {
  p50: number;
  serverCpu: number;
  dbCpu: number;
}

/** A SQL connection to the bench's database, outside the server: for the seeding. */
interface Sql {
  run(text: string): Promise<void>;
  rows<T>(text: string): Promise<T[]>;
  close(): Promise<void>;
}

async function connect(database: TestDatabase): Promise<Sql> {
  if (database.databaseUrl) {
    const client = new pg.Client({ connectionString: database.databaseUrl });
    await client.connect();
    return {
      run: async (text) => void (await client.query(text)),
      rows: async <T>(text: string) => (await client.query(text)).rows as T[],
      close: () => client.end(),
    };
  }
  const db = new Database(`${database.dataDir}/switchboard.db`);
  return {
    run: async (text) => void db.exec(text),
    rows: async <T>(text: string) => db.prepare(text).all() as T[],
    close: async () => {
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  };
}

/**
 * Clones the row of `table` matching `where` `count` times in one statement, each column from
 * `overrides` (SQL over the clone's number `i`, 1 … count) or else the template's; the serial
 * `seq` is left to the database.
 */
async function clone(sqlc: Sql, dialect: string, table: string, where: string, count: number, overrides: Record<string, string>) {
  const [template] = await sqlc.rows<Record<string, unknown>>(`SELECT * FROM ${table} WHERE ${where}`);
  if (template === undefined) throw new Error(`no ${table} row where ${where}`);
  const columns = Object.keys(template).filter((c) => c !== 'seq');
  const values = columns.map((c) => overrides[c] ?? `t.${c}`).join(', ');
  const integers =
    dialect === 'postgres'
      ? `generate_series(1, ${count}) AS n(i)`
      : `(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count}) SELECT i FROM n) AS n`;
  await sqlc.run(`INSERT INTO ${table} (${columns.join(', ')}) SELECT ${values} FROM ${table} AS t, ${integers} WHERE t.${where}`);
}

async function api(server: SwitchboardProcess, method: string, path: string, body?: unknown): Promise<Json> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${server.adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text === '' ? null : JSON.parse(text);
}

/** Reads the event stream until its first event, then hangs up. */
async function firstStreamed(server: SwitchboardProcess, query: string): Promise<void> {
  const abort = new AbortController();
  const response = await fetch(`${server.url}/api/v1/events/stream?${query}`, {
    headers: { authorization: `Bearer ${server.adminKey}` },
    signal: abort.signal,
  });
  const reader = response.body!.getReader();
  let text = '';
  const decoder = new TextDecoder();
  while (!text.includes('\ndata:') && !text.startsWith('data:')) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before an event: ${text}`);
    text += decoder.decode(value, { stream: true });
  }
  abort.abort();
  await reader.cancel().catch(() => undefined);
}

/** Makes one of each row to clone, through the API, and returns what the operations need. */
async function templates(server: SwitchboardProcess): Promise<{ planId: string; runId: string }> {
  await api(server, 'POST', '/api/v1/messaging/send', { destination: AGENT, event_name: 'growth.template', payload: { n: 0 } });
  const plan = await api(server, 'POST', '/api/v1/coordination/plans', {
    alias: 'growth-plan',
    steps: [{ id: 'only', type: 'wait', seconds: 1 }],
  });
  const run = await api(server, 'POST', '/api/v1/coordination/runs', { plan_id: plan.data.id, input: {} });
  return { planId: plan.data.id, runId: run.data.id };
}

async function seed(database: TestDatabase, dialect: string, size: number, runId: string): Promise<void> {
  const sqlc = await connect(database);
  const now = Date.now();
  try {
    await clone(sqlc, dialect, 'messages', `event_name = 'growth.template'`, size - 1, {
      id: `'msg_growth_' || i`,
      created_at: `${now - size} + i`,
      visible_at: `${now - size} + i`,
    });
    await clone(sqlc, dialect, 'runs', `id = '${runId}'`, size - 1, {
      id: `'run_growth_' || i`,
      status: `CASE WHEN i % 100 = 0 THEN 'failed' ELSE 'completed' END`,
      completed_at: `${now}`,
      idempotency_key: 'NULL',
    });
    const [event] = await sqlc.rows<{ seq: number }>(`SELECT min(seq) AS seq FROM events`);
    // The log: steps of runs, one task event in a hundred (a full first page at every size), and one routine pause at its very end.
    await clone(sqlc, dialect, 'events', `seq = ${event!.seq}`, size - 1, {
      type: `CASE WHEN i % 100 = 0 THEN 'task.created' ELSE 'run.step.completed' END`,
      subject: `'run_growth_' || i`,
      created_at: `${now}`,
    });
    await clone(sqlc, dialect, 'events', `seq = ${event!.seq}`, 1, { type: `'routine.paused'`, created_at: `${now}` });
  } finally {
    await sqlc.close();
  }
}

/**
 * PostgreSQL: waits until the server's leader vacuumed and analyzed the seeded tables (after its
 * first retention pass, as autovacuum is off), so the figures are of a server that tends its tables.
 */
async function vacuumedByServer(database: TestDatabase): Promise<void> {
  const sqlc = await connect(database);
  try {
    for (const deadline = Date.now() + 300_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
      const [row] = await sqlc.rows<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_user_tables WHERE relname IN ('messages', 'runs', 'events') AND last_vacuum IS NOT NULL`,
      );
      if (Number(row!.n) === 3) return;
    }
    throw new Error('the server did not vacuum the seeded tables within 5 minutes');
  } finally {
    await sqlc.close();
  }
}

async function measure(server: SwitchboardProcess, dbName: string | null, operation: () => Promise<void>): Promise<Figure> {
  for (let i = 0; i < WARM_UP; i++) await operation();
  const times: number[] = [];
  const cpu = server.cpuMs();
  const db = dbName === null ? 0 : backendCpuMs(dbName);
  for (let i = 0; i < REPEATS; i++) {
    const started = performance.now();
    await operation();
    times.push(performance.now() - started);
  }
  return {
    p50: median(times),
    serverCpu: (server.cpuMs() - cpu) / REPEATS,
    dbCpu: dbName === null ? 0 : (backendCpuMs(dbName) - db) / REPEATS,
  };
}

/**
 * 1 KB sends, 8 at a time, to a server of their own while the WAL is sampled: its largest size,
 * and the disk each message took (the database file's growth between the clean stops before and
 * after, each of which checkpoints the WAL into it).
 */
async function walDuringSends(database: TestDatabase): Promise<{ walMaxMb: number; diskPerMessageKb: number }> {
  const file = `${database.dataDir}/switchboard.db`;
  const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
  const before = size(file);
  const server = await startSwitchboard({ database });
  let walMax = 0;
  const sampler = setInterval(() => (walMax = Math.max(walMax, size(`${file}-wal`))), 50);
  try {
    const payload = { text: 'x'.repeat(1024) };
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < WAL_SENDS) {
          next += 1;
          await api(server, 'POST', '/api/v1/messaging/send', { destination: 'growth-wal', event_name: 'growth.wal', payload });
        }
      }),
    );
  } finally {
    clearInterval(sampler);
    walMax = Math.max(walMax, size(`${file}-wal`));
    await server.stop();
  }
  return { walMaxMb: walMax / 2 ** 20, diskPerMessageKb: (size(file) - before) / WAL_SENDS / 1024 };
}

export default async function growth(): Promise<void> {
  const figures = new Map<string, Map<number, Figure>>();
  const wal: string[] = [];
  for (const dialect of ['sqlite', 'postgres'] as const) {
    if (dialect === 'postgres' && !process.env.SWITCHBOARD_TEST_DATABASE_URL) continue;
    for (const size of SIZES) {
      const database = await createTestDatabase(dialect);
      const dbName = database.databaseUrl === null ? null : new URL(database.databaseUrl).pathname.slice(1);
      try {
        let server = await startSwitchboard({ database });
        const { planId, runId } = await templates(server);
        await server.stop();
        const seeded = Date.now();
        await seed(database, dialect, size, runId);
        console.log(`${dialect} ${fmt(size)}: seeded in ${fmt((Date.now() - seeded) / 1000)} s`);
        server = await startSwitchboard({ database });
        try {
          if (database.databaseUrl !== null) await vacuumedByServer(database);
          const firstEvent = (await api(server, 'GET', '/api/v1/events?limit=1')).data[0].id as string;
          const deepCursor = (await api(server, 'GET', `/api/v1/coordination/runs?limit=50&offset=${Math.floor(size / 2)}`)).meta
            .next_cursor as string;
          const operations: [string, () => Promise<void>][] = [
            [
              'send',
              () => api(server, 'POST', '/api/v1/messaging/send', { destination: AGENT, event_name: 'growth.op', payload: { n: 1 } }),
            ],
            [
              'receive + acknowledge',
              async () => {
                const received = await api(server, 'GET', `/api/v1/messaging/receive?agent_id=${AGENT}&max=1`);
                const [message] = received.data.messages;
                await api(server, 'POST', '/api/v1/messaging/acknowledge', { message_id: message.message_id });
              },
            ],
            ['inboxes', () => api(server, 'GET', '/api/v1/messaging/inboxes')],
            ["an inbox's first page", () => api(server, 'GET', `/api/v1/messaging/inboxes/${AGENT}/messages?limit=50`)],
            ['start a run', () => api(server, 'POST', '/api/v1/coordination/runs', { plan_id: planId, input: {} })],
            ['read a run', () => api(server, 'GET', `/api/v1/coordination/runs/${runId}`)],
            ['runs, first page', () => api(server, 'GET', '/api/v1/coordination/runs?limit=50')],
            ['runs by status, first page', () => api(server, 'GET', '/api/v1/coordination/runs?status=failed&limit=50')],
            ['runs, a page in the middle by cursor', () => api(server, 'GET', `/api/v1/coordination/runs?limit=50&cursor=${deepCursor}`)],
            ['events, first page', () => api(server, 'GET', '/api/v1/events?limit=50')],
            ['events by type, first page', () => api(server, 'GET', '/api/v1/events?type=task.created&limit=50')],
            ['event stream resumed, next match at the end', () => firstStreamed(server, `after=${firstEvent}&type=routine.paused`)],
          ];
          for (const [name, operation] of operations) {
            const figure = await measure(server, dbName, async () => void (await operation()));
            if (!figures.has(`${dialect}|${name}`)) figures.set(`${dialect}|${name}`, new Map());
            figures.get(`${dialect}|${name}`)!.set(size, figure);
            console.log(
              `${dialect} ${fmt(size)} ${name}: ${fmt(figure.p50, 2)} ms, server ${fmt(figure.serverCpu, 2)} ms, db ${fmt(figure.dbCpu, 2)} ms`,
            );
          }
        } finally {
          await server.stop();
        }
        if (dialect === 'sqlite') {
          const { walMaxMb, diskPerMessageKb } = await walDuringSends(database);
          wal.push(`| ${fmt(size)} | ${fmt(walMaxMb, 1)} | ${fmt(diskPerMessageKb, 2)} |`);
        }
      } finally {
        await database.drop();
      }
    }
  }
  const [small, large] = [SIZES[0]!, SIZES[SIZES.length - 1]!];
  const lines = [
    `${machine()}.`,
    '',
    `### Operations at ${SIZES.map((s) => fmt(s)).join(' → ')} rows (pending messages in one inbox, finished runs, events; ${REPEATS} sequential requests after ${WARM_UP} to warm up; PostgreSQL with autovacuum off)`,
    '',
    `| backend | operation | ${SIZES.map((s) => `p50 ms @${fmt(s)}`).join(' | ')} | server + db CPU ms @${fmt(small)} | @${fmt(large)} | CPU ×${fmt(large)}/${fmt(small)} |`,
    `|---|---|${SIZES.map(() => '---:').join('|')}|---:|---:|---:|`,
  ];
  for (const [key, bySize] of figures) {
    const [dialect, name] = key.split('|');
    const cpu = (f: Figure) => f.serverCpu + f.dbCpu;
    const first = bySize.get(small)!;
    const last = bySize.get(large)!;
    lines.push(
      `| ${dialect} | ${name} | ${SIZES.map((s) => fmt(bySize.get(s)!.p50, 2)).join(' | ')} | ${fmt(cpu(first), 2)} | ${fmt(cpu(last), 2)} | ${fmt(cpu(last) / Math.max(cpu(first), 0.01), 2)} |`,
    );
  }
  lines.push(
    '',
    'Target: every operation within 2× from the smallest to the largest size.',
    '',
    `SQLite's WAL during ${fmt(WAL_SENDS)} sends of a 1 KB payload (8 at a time) after the operations, and the disk each took (the database file's growth between clean stops):`,
    '',
    '| rows | largest WAL MB | disk KB per message |',
    '|---:|---:|---:|',
    ...wal,
    '',
  );
  record('growth', lines.join('\n'));
  console.log(lines.join('\n'));
}
