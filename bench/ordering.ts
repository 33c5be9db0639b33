/**
 * Ordering keys' cost, keyed against keyless, on SQLite and PostgreSQL, 127.0.0.1 only:
 * (a) drain: a backlog of BENCH_ORDERING_MESSAGES (100,000) sent in batches of 500, over
 *     BENCH_ORDERING_KEYS (1,000) ordering keys in turn or none, drained by
 *     BENCH_ORDERING_RECEIVERS (8) concurrent receivers (receive max=100, one ack per batch), so
 *     keys held by another receiver's lease are skipped all the time; target ≥ 80% of keyless;
 * (b) sends: 4 producers, one awaited POST /send each, for BENCH_ORDERING_SEND_SECONDS (5), with
 *     an ordering key per message from the same keys or none (on PostgreSQL a keyed send's insert
 *     locks its key first, in the same statement).
 * Per measurement msgs/s and server CPU per message (the server process, plus on PostgreSQL the
 * backends of its database). The variants alternate in BENCH_ORDERING_ROUNDS (3) rounds, the
 * one that goes first swapping each round; medians reported. BENCH_ORDERING_DIALECTS
 * (`sqlite,postgres`) picks the backends; BENCH_ORDERING_ROOT serves another built checkout (a
 * before/after comparison, recorded apart); BENCH_ORDERING_PHASES (`drain,sends`) picks the
 * phases; BENCH_CPU_PROF names a directory for the server's V8 CPU profiles (bench/lib.ts).
 * A run of one backend or phase is recorded apart from the full one.
 */
import os from 'node:os';
import { postgresTestUrl } from '../test/helpers/database.js';
import type { Dialect } from '../test/helpers/database.js';
import { backendCpuMs, fmt, machine, median, record, startSwitchboard, type SwitchboardProcess } from './lib.js';
import { call } from './messaging.js';
import { databaseOf } from './peers/system.js';

function setting(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

const MESSAGES = Math.round(setting('BENCH_ORDERING_MESSAGES', 100_000));
const KEYS = Math.round(setting('BENCH_ORDERING_KEYS', 1_000));
const RECEIVERS = Math.round(setting('BENCH_ORDERING_RECEIVERS', 8));
const ROUNDS = Math.round(setting('BENCH_ORDERING_ROUNDS', 3));
const SEND_SECONDS = setting('BENCH_ORDERING_SEND_SECONDS', 5);
const PRODUCERS = 4;
const SEND_BATCH = 500;
const VARIANTS = ['keyless', 'keyed'] as const;
type Variant = (typeof VARIANTS)[number];

interface Measurement {
  rate: number;
  cpuUs: number;
  /** Messages per receive that returned any (drain). */
  perReceive?: number;
}

/** CPU ms of the server and, on PostgreSQL, of its database's backends. */
function serverCpuMs(server: SwitchboardProcess): number {
  const url = server.database.databaseUrl;
  return server.cpuMs() + (url ? backendCpuMs(databaseOf(url)) : 0);
}

/** Times `work`, which may `finish` early: the moment its last message is done, before its idle polls return. */
async function measured(server: SwitchboardProcess, work: (finish: () => void) => Promise<number>): Promise<Measurement> {
  const cpuBefore = serverCpuMs(server);
  const started = performance.now();
  let end: { at: number; cpu: number } | undefined;
  const messages = await work(() => (end ??= { at: performance.now(), cpu: serverCpuMs(server) }));
  end ??= { at: performance.now(), cpu: serverCpuMs(server) };
  return { rate: messages / ((end.at - started) / 1000), cpuUs: ((end.cpu - cpuBefore) * 1000) / messages };
}

async function agentKey(server: SwitchboardProcess, agentId: string): Promise<string> {
  const res = await call(`${server.url}/api/v1/auth/keys`, 'POST', server.adminKey, { agent_id: agentId });
  if (res.status !== 201) throw new Error(`a key for ${agentId}: HTTP ${res.status}`);
  return res.json.data.key as string;
}

function expectStatus(what: string, res: { status: number; json: unknown }, status: number): void {
  if (res.status !== status) throw new Error(`${what}: HTTP ${res.status} ${JSON.stringify(res.json)}`);
}

const keyOf = (variant: Variant, n: number) => (variant === 'keyed' ? { ordering_key: `key-${n % KEYS}` } : {});

/** (a) The backlog, sent, then drained by concurrent receivers (the drain alone is measured). */
async function drain(server: SwitchboardProcess, variant: Variant, destination: string): Promise<Measurement> {
  for (let sent = 0; sent < MESSAGES; sent += SEND_BATCH) {
    const messages = Array.from({ length: Math.min(SEND_BATCH, MESSAGES - sent) }, (_, i) => ({
      destination,
      event_name: 'backlog',
      payload: { n: sent + i },
      ...keyOf(variant, sent + i),
    }));
    expectStatus('send-batch', await call(`${server.url}/api/v1/messaging/send-batch`, 'POST', server.adminKey, { messages }), 201);
  }
  const key = await agentKey(server, destination);
  let receives = 0;
  const result = await measured(server, async (finish) => {
    let done = 0;
    await Promise.all(
      Array.from({ length: RECEIVERS }, async () => {
        while (done < MESSAGES) {
          // A short long poll: a receiver whose keys are all leased waits for an ack's wake-up.
          const res = await call(`${server.url}/api/v1/messaging/receive?agent_id=${destination}&max=100&timeout=1`, 'GET', key);
          expectStatus('receive', res, 200);
          const ids = (res.json.data.messages as { message_id: string }[]).map((m) => m.message_id);
          if (ids.length === 0) continue;
          receives++;
          expectStatus('acknowledge', await call(`${server.url}/api/v1/messaging/acknowledge`, 'POST', key, { message_ids: ids }), 200);
          done += ids.length;
          if (done >= MESSAGES) finish();
        }
      }),
    );
    return done;
  });
  return { ...result, perReceive: MESSAGES / receives };
}

/** (b) Single awaited sends from 4 producers for SEND_SECONDS, with nobody receiving. */
async function sends(server: SwitchboardProcess, variant: Variant, destination: string): Promise<Measurement> {
  const key = await agentKey(server, `${destination}-producer`);
  return measured(server, async () => {
    const until = performance.now() + SEND_SECONDS * 1000;
    let n = 0;
    await Promise.all(
      Array.from({ length: PRODUCERS }, async () => {
        while (performance.now() < until) {
          const body = { destination, event_name: 'send', payload: { n }, ...keyOf(variant, n++) };
          expectStatus('send', await call(`${server.url}/api/v1/messaging/send`, 'POST', key, body), 201);
        }
      }),
    );
    return n;
  });
}

type Results = Map<string, Measurement[]>;

function medianOf(runs: Measurement[]): Measurement {
  const batches = runs.flatMap((r) => (r.perReceive === undefined ? [] : [r.perReceive]));
  return {
    rate: median(runs.map((r) => r.rate)),
    cpuUs: median(runs.map((r) => r.cpuUs)),
    perReceive: batches.length ? median(batches) : undefined,
  };
}

export default async function ordering(): Promise<void> {
  process.env.SWITCHBOARD_TEST_DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/test';
  const dialects = (process.env.BENCH_ORDERING_DIALECTS ?? 'sqlite,postgres')
    .split(',')
    .map((d) => d.trim())
    .filter((d): d is Dialect => d === 'sqlite' || (d === 'postgres' && postgresTestUrl() !== undefined));
  const root = process.env.BENCH_ORDERING_ROOT;
  const phases = (process.env.BENCH_ORDERING_PHASES ?? 'drain,sends').split(',').map((p) => p.trim());
  const loadBefore = os.loadavg()[0]!;
  const results: Results = new Map();
  const add = (name: string, m: Measurement) => {
    results.set(name, [...(results.get(name) ?? []), m]);
    const batches = m.perReceive === undefined ? '' : `, ${fmt(m.perReceive, 1)} msgs per receive`;
    console.log(`${name}: ${fmt(m.rate)} msgs/s, server ${fmt(m.cpuUs, 1)} µs CPU/msg${batches}`);
  };
  for (const dialect of dialects) {
    const server = await startSwitchboard({ dialect, root });
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
        if (phases.includes('drain'))
          for (const variant of order) add(`${dialect} drain ${variant}`, await drain(server, variant, `drain-${variant}-${round}`));
        if (phases.includes('sends'))
          for (const variant of order) add(`${dialect} sends ${variant}`, await sends(server, variant, `sends-${variant}-${round}`));
      }
    } finally {
      await server.stop();
    }
  }
  const row = (dialect: Dialect, what: 'drain' | 'sends') => {
    const keyless = medianOf(results.get(`${dialect} ${what} keyless`) ?? []);
    const keyed = medianOf(results.get(`${dialect} ${what} keyed`) ?? []);
    const backend = dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    const per = (m: Measurement) => (m.perReceive === undefined ? '—' : fmt(m.perReceive, 1));
    return `| ${backend} | ${what} | ${fmt(keyless.rate)} | ${fmt(keyless.cpuUs, 1)} | ${per(keyless)} | ${fmt(keyed.rate)} | ${fmt(keyed.cpuUs, 1)} | ${per(keyed)} | **${fmt((keyed.rate / keyless.rate) * 100, 1)}%** |`;
  };
  const command =
    `npm run build && ${root ? `BENCH_ORDERING_ROOT=${root} ` : ''}BENCH_ORDERING_DIALECTS=${dialects.join(',')} BENCH_ORDERING_PHASES=${phases.join(',')} ` +
    `BENCH_ORDERING_MESSAGES=${MESSAGES} BENCH_ORDERING_KEYS=${KEYS} BENCH_ORDERING_RECEIVERS=${RECEIVERS} ` +
    `BENCH_ORDERING_ROUNDS=${ROUNDS} BENCH_ORDERING_SEND_SECONDS=${SEND_SECONDS} flock /tmp/switchboard-bench.lock npm run bench -- ordering`;
  const lines = [
    `## Ordering keys: a ${fmt(MESSAGES)}-message backlog over ${fmt(KEYS)} keys, and keyed sends${root ? ` (served from ${root})` : ''}`,
    '',
    `Machine: ${machine()}. Command: \`${command}\` (${new Date().toISOString().slice(0, 10)}).`,
    `drain: the backlog sent in batches of ${SEND_BATCH} (key n mod ${fmt(KEYS)}, so each key's messages are spread through it), then`,
    `received by ${RECEIVERS} concurrent receivers (max=100, timeout=1, one ack per batch) until empty; only the drain is timed.`,
    `sends: ${PRODUCERS} producers, one awaited POST /send each, ${SEND_SECONDS} s. Server CPU: the server process, plus on PostgreSQL`,
    `the backends of its database. Keyless and keyed alternate in ${ROUNDS} rounds (the first swapping each round); medians. Target: drain ≥ 80%.`,
    '',
    '| backend | phase | keyless msgs/s | keyless µs CPU/msg | keyless msgs/receive | keyed msgs/s | keyed µs CPU/msg | keyed msgs/receive | keyed / keyless |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...dialects.flatMap((dialect) => (['drain', 'sends'] as const).filter((p) => phases.includes(p)).map((p) => row(dialect, p))),
    '',
    `1-minute load average ${fmt(loadBefore, 2)} at the start, ${fmt(os.loadavg()[0]!, 2)} at the end (the 2 cores are shared with other work).`,
    '',
    'Runs: ' + [...results].map(([name, runs]) => `${name} ${runs.map((r) => fmt(r.rate)).join(' / ')}`).join('; ') + '.',
  ];
  const apart = [root ? 'root' : '', dialects.length === 1 ? dialects[0]! : '', phases.length === 1 ? phases[0]! : ''].filter(Boolean);
  record(['ordering', ...apart].join('-'), lines.join('\n'));
  console.log(lines.join('\n'));
}
