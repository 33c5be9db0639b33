/**
 * Switchboard next to its peers, the same three workloads against each system
 * (bench/peers/<system>.ts, one PeerSystem each), in interleaved rounds, medians reported:
 *   W1: 4 producers → 4 consumers (a queue each), one 1 KB message per awaited send;
 *   W2: the same with sends in batches of 100;
 *   W3: one producer, one waiting consumer: send → receive latency, one message after each 5 ms pause.
 * Per system and workload: msgs/s, the broker processes' CPU per message (from /proc), the bench
 * process's own CPU per message (the clients), and end-to-end latency from the send time each
 * payload carries. A system whose service is down is skipped with one line. 127.0.0.1 only;
 * every measurement is bounded in time (W1, W2) or count (W3).
 *
 * Settings: BENCH_PEERS_SECONDS (each W1/W2 measurement, default 5), BENCH_PEERS_ROUNDS (2),
 * BENCH_PEERS_SAMPLES (W3, 300), BENCH_PEERS_WARMUP_SECONDS (one W1 per system first, 1),
 * BENCH_PEERS_SYSTEMS (comma-separated parts of system names to run, default all), BENCH_PEERS_WORKLOADS
 * (comma-separated keys among w1, w2, w3, default all).
 * The HTTP rows run twice: plain, and with flow control in use (a priority from 0–9 and an
 * ordering key of 1,000 per queue on every message), each right after the other in every round.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { fmt, machine, median, percentile, record } from './lib.js';
import { bullmq } from './peers/bullmq.js';
import { natsJetStream } from './peers/nats.js';
import { pgBoss } from './peers/pg-boss.js';
import { rabbitmq } from './peers/rabbitmq.js';
import { switchboardAgent } from './peers/switchboard-agent.js';
import { switchboardChannel } from './peers/switchboard-channel.js';
import { switchboardHttp } from './peers/switchboard-http.js';
import { stampedPayload, type PeerQueue, type PeerSystem, type ProcessGroup } from './peers/system.js';

function setting(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

interface Workload {
  readonly key: 'w1' | 'w2' | 'w3';
  readonly title: string;
}

const ALL_WORKLOADS: Workload[] = [
  { key: 'w1', title: 'W1: 4 producers → 4 consumers, one message per awaited send, 1 KB' },
  { key: 'w2', title: 'W2: 4 producers → 4 consumers, sends in batches of 100, 1 KB' },
  { key: 'w3', title: 'W3: one producer, one waiting consumer, send → receive latency after a 5 ms pause, 1 KB' },
];
const chosen = (process.env.BENCH_PEERS_WORKLOADS ?? '')
  .split(',')
  .map((key) => key.trim().toLowerCase())
  .filter(Boolean);
const WORKLOADS = ALL_WORKLOADS.filter((w) => chosen.length === 0 || chosen.includes(w.key));
const QUEUES = 4;
const BATCH = 100;
const PAUSE_MS = 5;
/** A W3 message not received within this long fails the measurement (a hang is a bug). */
const SAMPLE_TIMEOUT_MS = 10_000;

interface Measurement {
  /** Messages consumed per second (W1, W2). */
  rate?: number;
  messages: number;
  /** Broker CPU µs per message, by process group (node, postgres, nats-server …). */
  brokerCpuUs: Record<string, number>;
  clientCpuUs: number;
  p50: number;
  p99: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU ms (utime + stime) of a process so far; 0 once it is gone. */
function cpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // CLK_TCK 100 on Linux
  } catch {
    return 0;
  }
}

type CpuSnapshot = Map<string, Map<number, number>>;

async function brokerCpu(system: PeerSystem): Promise<CpuSnapshot> {
  const groups: ProcessGroup[] = await system.brokerProcesses();
  return new Map(groups.map((group) => [group.label, new Map(group.pids.map((pid) => [pid, cpuMs(pid)]))]));
}

/** µs per message by group; a process that appeared meanwhile (a new backend) counts whole. */
function brokerCpuPerMessage(before: CpuSnapshot, after: CpuSnapshot, messages: number): Record<string, number> {
  return Object.fromEntries(
    [...after].map(([label, pids]) => {
      let ms = 0;
      for (const [pid, now] of pids) ms += now - (before.get(label)?.get(pid) ?? 0);
      return [label, (ms * 1000) / Math.max(messages, 1)];
    }),
  );
}

/** The clients' CPU so far: the bench process's, and that of consumers running apart from it. */
interface ClientCpu {
  own: NodeJS.CpuUsage;
  consumers: Map<number, number>;
}

function clientCpu(system: PeerSystem): ClientCpu {
  return { own: process.cpuUsage(), consumers: new Map((system.consumerProcesses?.() ?? []).map((pid) => [pid, cpuMs(pid)])) };
}

function clientCpuMs(system: PeerSystem, since: ClientCpu): number {
  const used = process.cpuUsage(since.own);
  let ms = (used.user + used.system) / 1000;
  for (const pid of system.consumerProcesses?.() ?? []) ms += cpuMs(pid) - (since.consumers.get(pid) ?? 0);
  return ms;
}

async function withQueues<T>(system: PeerSystem, count: number, run: (queues: PeerQueue[]) => Promise<T>): Promise<T> {
  const prefix = `peers-${randomBytes(4).toString('hex')}`;
  const queues: PeerQueue[] = [];
  try {
    for (let i = 0; i < count; i++) queues.push(await system.queue(`${prefix}-${i}`));
    return await run(queues);
  } finally {
    for (const queue of queues)
      await queue.close().catch((error: unknown) => console.warn(`closing a queue of ${system.name}: ${String(error)}`));
  }
}

/** Stops every consumer at once (a long-polling one takes up to its poll's timeout), then throws the first one's failure. */
async function stopAll(stops: Array<() => Promise<void>>): Promise<void> {
  const failure = (await Promise.allSettled(stops.map((stop) => stop()))).find(
    (result): result is PromiseRejectedResult => result.status === 'rejected',
  );
  if (failure) throw failure.reason;
}

/** W1 (batch 1) and W2: producers send as fast as their sends return for `seconds`; consumers count what they receive meanwhile. */
function throughput(system: PeerSystem, batch: number, seconds: number): Promise<Measurement> {
  return withQueues(system, QUEUES, async (queues) => {
    const latencies: number[] = [];
    let measuring = true;
    const stops = await Promise.all(
      queues.map((queue) =>
        queue.consume((sentAt) => {
          if (measuring) latencies.push(performance.now() - sentAt);
        }),
      ),
    );
    let producers: Promise<void[]> | undefined;
    const measure = async (): Promise<Measurement> => {
      const cpuBefore = await brokerCpu(system);
      const clientBefore = clientCpu(system);
      const started = performance.now();
      const until = started + seconds * 1000;
      producers = Promise.all(
        queues.map(async (queue) => {
          while (performance.now() < until) await queue.send(Array.from({ length: batch }, stampedPayload));
        }),
      );
      // A producer that fails ends the measurement at once rather than after the window.
      await Promise.race([sleep(seconds * 1000), producers]);
      measuring = false;
      const elapsed = (performance.now() - started) / 1000;
      const clientMs = clientCpuMs(system, clientBefore);
      const cpuAfter = await brokerCpu(system);
      await producers;
      const messages = latencies.length;
      return {
        rate: messages / elapsed,
        messages,
        brokerCpuUs: brokerCpuPerMessage(cpuBefore, cpuAfter, messages),
        clientCpuUs: (clientMs * 1000) / Math.max(messages, 1),
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
      };
    };
    const measured = await measure().catch(async (error: unknown) => {
      measuring = false;
      await producers?.catch(() => undefined);
      await stopAll(stops).catch(() => undefined);
      throw error;
    });
    await stopAll(stops);
    return measured;
  });
}

/** W3: `samples` single messages, each sent after a pause to a consumer already waiting. */
function latency(system: PeerSystem, samples: number): Promise<Measurement> {
  return withQueues(system, 1, async ([queue]) => {
    let waiting: ((ms: number) => void) | undefined;
    const stop = await queue!.consume((sentAt) => {
      const received = waiting;
      waiting = undefined;
      received?.(performance.now() - sentAt);
    });
    try {
      const latencies: number[] = [];
      const cpuBefore = await brokerCpu(system);
      const clientBefore = clientCpu(system);
      for (let i = 0; i < samples; i++) {
        await sleep(PAUSE_MS);
        let timer: NodeJS.Timeout | undefined;
        const received = new Promise<number>((resolve, reject) => {
          waiting = resolve;
          timer = setTimeout(() => reject(new Error(`a message was not received within ${SAMPLE_TIMEOUT_MS} ms`)), SAMPLE_TIMEOUT_MS);
        });
        try {
          await queue!.send([stampedPayload()]);
          latencies.push(await received);
        } finally {
          clearTimeout(timer);
        }
      }
      const clientMs = clientCpuMs(system, clientBefore);
      const cpuAfter = await brokerCpu(system);
      return {
        messages: samples,
        brokerCpuUs: brokerCpuPerMessage(cpuBefore, cpuAfter, samples),
        clientCpuUs: (clientMs * 1000) / samples,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
      };
    } finally {
      await stop();
    }
  });
}

function medianOf(runs: Measurement[]): Measurement {
  const labels = Object.keys(runs[0]!.brokerCpuUs);
  return {
    rate: runs[0]!.rate === undefined ? undefined : median(runs.map((r) => r.rate!)),
    messages: runs.reduce((sum, r) => sum + r.messages, 0),
    brokerCpuUs: Object.fromEntries(labels.map((label) => [label, median(runs.map((r) => r.brokerCpuUs[label] ?? 0))])),
    clientCpuUs: median(runs.map((r) => r.clientCpuUs)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
  };
}

function brokerCell(cpu: Record<string, number>): string {
  const entries = Object.entries(cpu);
  const total = fmt(entries.reduce((sum, [, us]) => sum + us, 0));
  return entries.length > 1 ? `${total} (${entries.map(([label, us]) => `${label} ${fmt(us)}`).join(' + ')})` : total;
}

function table(workload: Workload, results: Map<string, Measurement>, rounds: number): string[] {
  const rows = [...results].sort(([, a], [, b]) => (workload.key === 'w3' ? a.p50 - b.p50 : b.rate! - a.rate!));
  const head =
    workload.key === 'w3'
      ? ['| system | p50 ms | p99 ms | broker CPU µs/msg | client CPU µs/msg |', '|---|---:|---:|---:|---:|']
      : ['| system | msgs/s | broker CPU µs/msg | client CPU µs/msg | e2e p50 ms | e2e p99 ms |', '|---|---:|---:|---:|---:|---:|'];
  const title = `### ${workload.title} (medians of ${rounds} round${rounds > 1 ? 's' : ''})`;
  if (rows.length === 0) return [title, '', 'No system was measured.', ''];
  return [
    title,
    '',
    ...head,
    ...rows.map(([name, m]) =>
      workload.key === 'w3'
        ? `| ${name} | ${fmt(m.p50, 2)} | ${fmt(m.p99, 2)} | ${brokerCell(m.brokerCpuUs)} | ${fmt(m.clientCpuUs)} |`
        : `| ${name} | ${fmt(m.rate!)} | ${brokerCell(m.brokerCpuUs)} | ${fmt(m.clientCpuUs)} | ${fmt(m.p50, 2)} | ${fmt(m.p99, 2)} |`,
    ),
    '',
  ];
}

export default async function peers(): Promise<void> {
  const seconds = setting('BENCH_PEERS_SECONDS', 5);
  const rounds = Math.round(setting('BENCH_PEERS_ROUNDS', 2));
  const samples = Math.round(setting('BENCH_PEERS_SAMPLES', 300));
  const warmup = setting('BENCH_PEERS_WARMUP_SECONDS', 1);
  const only = (process.env.BENCH_PEERS_SYSTEMS ?? '')
    .split(',')
    .map((part) => part.trim().toLowerCase())
    .filter(Boolean);
  // The peers' PostgreSQL is the one the tests use; its usual address when none is set.
  process.env.SWITCHBOARD_TEST_DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/test';
  const loadBefore = os.loadavg()[0]!;

  const candidates = [
    switchboardHttp('sqlite'),
    switchboardHttp('sqlite', true),
    switchboardHttp('postgres'),
    switchboardHttp('postgres', true),
    switchboardChannel('sqlite'),
    switchboardChannel('postgres'),
    switchboardChannel('sqlite', true),
    switchboardChannel('postgres', true),
    switchboardAgent('sqlite', 'typescript'),
    switchboardAgent('sqlite', 'python'),
    switchboardAgent('postgres', 'typescript'),
    switchboardAgent('postgres', 'python'),
    natsJetStream(),
    rabbitmq(),
    bullmq(),
    pgBoss(),
  ].filter((system) => only.length === 0 || only.some((part) => system.name.toLowerCase().includes(part)));
  const systems: PeerSystem[] = [];
  const notes: string[] = [];
  const results = new Map(WORKLOADS.map((w) => [w.key, new Map<string, Measurement[]>()]));
  // Skipped and failed systems: a failed one's partial figures are left out with it.
  const dropped = new Set<PeerSystem>();
  const fail = (system: PeerSystem, what: string, error: unknown) => {
    dropped.add(system);
    const line = `- ${system.name}: failed in ${what}: ${error instanceof Error ? error.message : String(error)}`;
    notes.push(line);
    console.warn(line);
  };
  // Interrupted, it still stops the servers it started and drops the databases it made.
  const interrupted = (signal: NodeJS.Signals) => {
    console.warn(`${signal}: tearing down`);
    void Promise.all(systems.map((system) => system.teardown().catch(() => undefined))).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  try {
    for (const system of candidates) {
      // Listed first, so a setup that throws half-way is still torn down.
      systems.push(system);
      try {
        const reason = await system.setup();
        if (reason) {
          dropped.add(system);
          notes.push(`- ${system.name}: skipped: ${reason}`);
          console.log(`skipped ${system.name}: ${reason}`);
        }
      } catch (error) {
        fail(system, 'setup', error);
      }
    }
    const running = () => systems.filter((system) => !dropped.has(system));
    for (const system of running()) {
      await throughput(system, 1, warmup).catch((error: unknown) => fail(system, 'the warm-up', error));
    }
    for (let round = 0; round < rounds; round++) {
      for (const system of running()) {
        for (const workload of WORKLOADS) {
          try {
            const measured =
              workload.key === 'w3' ? await latency(system, samples) : await throughput(system, workload.key === 'w1' ? 1 : BATCH, seconds);
            const runs = results.get(workload.key)!;
            runs.set(system.name, [...(runs.get(system.name) ?? []), measured]);
            console.log(
              `round ${round + 1} ${workload.key} ${system.name}: ${measured.rate === undefined ? '' : `${fmt(measured.rate)} msgs/s, `}` +
                `broker ${brokerCell(measured.brokerCpuUs)} µs/msg, client ${fmt(measured.clientCpuUs)} µs/msg, p50 ${fmt(measured.p50, 2)} ms, p99 ${fmt(measured.p99, 2)} ms`,
            );
          } catch (error) {
            fail(system, `round ${round + 1} ${workload.key}`, error);
            break;
          }
        }
      }
    }
  } finally {
    process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
    for (const system of systems)
      await system.teardown().catch((error: unknown) => console.warn(`tearing down ${system.name}: ${String(error)}`));
  }

  const droppedNames = new Set([...dropped].map((system) => system.name));
  const medians = new Map(
    WORKLOADS.map((w) => [
      w.key,
      new Map([...results.get(w.key)!].filter(([name]) => !droppedNames.has(name)).map(([name, runs]) => [name, medianOf(runs)])),
    ]),
  );
  const lines = [
    only.length === 0 ? '## Peers' : `## Peers: ${only.join(', ')}`,
    '',
    `Machine: ${machine()}. Command: \`npm run build && ${only.length === 0 ? '' : `BENCH_PEERS_SYSTEMS='${only.join(',')}' `}flock /tmp/switchboard-bench.lock npm run bench -- peers\` ` +
      `(BENCH_PEERS_SECONDS=${seconds}, BENCH_PEERS_ROUNDS=${rounds}, BENCH_PEERS_SAMPLES=${samples}; ${new Date().toISOString().slice(0, 10)}).`,
    '',
    'Each system gets fresh queues per measurement; the systems take turns within each round (every workload of one system, then the next).',
    'Broker CPU is utime + stime from /proc of the broker processes (nats-server, beam.smp, redis-server; for PostgreSQL the backends',
    'of the bench database plus the WAL writer and the checkpointer; for Switchboard its server process, plus those on PostgreSQL),',
    'divided by the messages consumed; client CPU is the bench process (every producer and consumer) per message, plus the python3',
    "processes of the Python agent worker rows. The agent worker rows consume with the SDKs' own workers (4 handlers each, long polls,",
    "one acknowledgement per message) where the HTTP row's consumer receives 100 and acknowledges them in one call. In W3 both include",
    'what the processes do while they wait through the pauses (timers, polls), which the few messages then carry.',
    'e2e is from the send time carried in the payload to the consumer receiving the message; in W2 producers can outrun consumers, so its e2e',
    'includes the backlog that builds up. Settings: BENCH_PEERS_SECONDS (each W1/W2 measurement), BENCH_PEERS_ROUNDS, BENCH_PEERS_SAMPLES (W3),',
    'BENCH_PEERS_WARMUP_SECONDS, BENCH_PEERS_SYSTEMS (comma-separated parts of system names, e.g. `nats,switchboard`).',
    '',
    ...WORKLOADS.flatMap((workload) => table(workload, medians.get(workload.key)!, rounds)),
    ...(notes.length > 0 ? ['Not measured or incomplete:', '', ...notes, ''] : []),
    `1-minute load average ${fmt(loadBefore, 2)} at the start, ${fmt(os.loadavg()[0]!, 2)} at the end (the 2 cores are shared with other work).`,
    '',
    '<details><summary>JSON</summary>',
    '',
    '```json',
    JSON.stringify(
      {
        seconds,
        rounds,
        samples,
        machine: machine(),
        results: Object.fromEntries([...medians].map(([key, byName]) => [key, Object.fromEntries(byName)])),
        notes,
      },
      (_key, value: unknown) => (typeof value === 'number' ? Math.round(value * 100) / 100 : value),
      1,
    ),
    '```',
    '',
    '</details>',
  ];
  // A run of some systems is recorded apart, so that it does not replace the table of all of them.
  record(only.length === 0 ? 'peers' : `peers-${only.join('-').replace(/[^a-z0-9-]+/g, '_')}`, lines.join('\n'));
  console.log(lines.join('\n'));
}
