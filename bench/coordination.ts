/**
 * Issue 7: (a) a 100-step sequential plan driven by one echo agent over HTTP — the per-step
 * engine overhead (target p50 ≤ 3 ms on SQLite); (b) 1,000 concurrent runs of a 5-step
 * fan-out/fan-in plan — steps per second (target ≥ 1,000 on SQLite and on PostgreSQL).
 * Issue 8: (c) event triggers on SQLite — publish → run started latency (target p99 ≤ 20 ms)
 * and event-triggered runs per second (target ≥ 1,000 sustained).
 * 127.0.0.1 only; every phase is bounded in count and time.
 */
import os from 'node:os';
import { fmt, load, machine, percentile, record, startSwitchboard, type SwitchboardProcess } from './lib.js';

const SEQUENTIAL_STEPS = 100;
const SEQUENTIAL_RUNS = 5;
const FAN_RUNS = 1000;
const FAN_STEPS = 5;
const AGENT_WORKERS = 8;
const AGENT_BATCH = 50;
const PHASE_LIMIT_MS = 120_000;

interface Message {
  message_id: string;
  payload: { run_id: string; step_id: string; input: unknown };
}

/** The fields of the envelopes this bench reads. */
interface Reply {
  data: { id: string; key: string; status: string; messages: Message[] };
  meta: { total: number };
}

class Client {
  constructor(
    private readonly server: SwitchboardProcess,
    private readonly key: string,
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<Reply> {
    const res = await fetch(`${this.server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as Reply;
  }

  async receive(agent: string, max: number, timeout: number): Promise<Message[]> {
    return (await this.call('GET', `/api/v1/messaging/receive?agent_id=${agent}&max=${max}&timeout=${timeout}`)).data.messages;
  }
}

async function setup(server: SwitchboardProcess, agent: string): Promise<{ admin: Client; worker: Client }> {
  const admin = new Client(server, server.adminKey);
  const key = (await admin.call('POST', '/api/v1/auth/keys', { agent_id: agent, role: 'agent' })).data.key as string;
  return { admin, worker: new Client(server, key) };
}

/**
 * (a) One run at a time; the agent acknowledges each step and long-polls for the next. A hop
 * is the time from sending the acknowledgement to holding the next step's message. The same
 * agent then measures plain messaging (acknowledge a message, receive one already waiting):
 * what a hop costs without the engine.
 */
async function sequential(server: SwitchboardProcess) {
  const { admin, worker } = await setup(server, 'seq-echo');
  const steps = Array.from({ length: SEQUENTIAL_STEPS }, (_, i) => ({
    id: `s${i}`,
    type: 'agent',
    agent: 'seq-echo',
    ...(i > 0 && { depends_on: [`s${i - 1}`], input: { previous: `{{steps.s${i - 1}.output.n}}` } }),
  }));
  await admin.call('POST', '/api/v1/coordination/plans', { alias: 'sequential', steps });
  const hops: number[] = [];
  const runTimes: number[] = [];
  const deadline = Date.now() + PHASE_LIMIT_MS;
  for (let r = 0; r < SEQUENTIAL_RUNS + 1 && Date.now() < deadline; r++) {
    const started = performance.now();
    const run = (await admin.call('POST', '/api/v1/coordination/runs', { plan_id: 'sequential' })).data;
    let [message] = await worker.receive('seq-echo', 1, 5);
    for (let i = 0; message; i++) {
      const t0 = performance.now();
      await worker.call('POST', '/api/v1/messaging/acknowledge', { message_id: message.message_id, output: { n: i } });
      if (i === SEQUENTIAL_STEPS - 1) break;
      [message] = await worker.receive('seq-echo', 1, 5);
      if (r > 0) hops.push(performance.now() - t0); // the first run warms up
    }
    const done = (await admin.call('GET', `/api/v1/coordination/runs/${run.id}`)).data;
    if (done.status !== 'completed') throw new Error(`sequential run ended ${done.status}`);
    if (r > 0) runTimes.push(performance.now() - started);
  }

  const plain: number[] = [];
  const acks: number[] = [];
  const receives: number[] = [];
  for (let i = 0; i < 500; i++) {
    await admin.call('POST', '/api/v1/messaging/send', { destination: 'seq-echo', event_name: 'plain', payload: { i } });
  }
  let [message] = await worker.receive('seq-echo', 1, 1);
  for (let i = 0; message && i < 499; i++) {
    const t0 = performance.now();
    await worker.call('POST', '/api/v1/messaging/acknowledge', { message_id: message.message_id, output: { n: i } });
    const t1 = performance.now();
    [message] = await worker.receive('seq-echo', 1, 1);
    const t2 = performance.now();
    if (i >= 50) {
      plain.push(t2 - t0);
      acks.push(t1 - t0);
      receives.push(t2 - t1);
    }
  }
  return {
    hopP50: percentile(hops, 50),
    hopP99: percentile(hops, 99),
    plainP50: percentile(plain, 50),
    plainP99: percentile(plain, 99),
    runMs: percentile(runTimes, 50),
    hops: hops.length,
  };
}

/**
 * (b) Starts FAN_RUNS runs of split → (a, b, c) → join while no agent listens, then lets
 * AGENT_WORKERS loops of the same agent drain them (receive up to AGENT_BATCH, acknowledge the batch)
 * and times until every run has completed.
 */
export async function fanOut(server: SwitchboardProcess) {
  const { admin, worker } = await setup(server, 'fan-echo');
  const agentStep = (id: string, depends_on?: string[]) => ({ id, type: 'agent', agent: 'fan-echo', ...(depends_on && { depends_on }) });
  await admin.call('POST', '/api/v1/coordination/plans', {
    alias: 'fan',
    steps: [
      agentStep('split'),
      agentStep('a', ['split']),
      agentStep('b', ['split']),
      agentStep('c', ['split']),
      agentStep('join', ['a', 'b', 'c']),
    ],
  });
  const createStarted = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < FAN_RUNS) await admin.call('POST', '/api/v1/coordination/runs', { plan_id: 'fan' });
    }),
  );
  const createRate = FAN_RUNS / ((performance.now() - createStarted) / 1000);

  const cpuBefore = server.cpuMs();
  const started = performance.now();
  const deadline = Date.now() + PHASE_LIMIT_MS;
  let acked = 0;
  let stop = false;
  const loops = Array.from({ length: AGENT_WORKERS }, async () => {
    while (!stop && Date.now() < deadline) {
      const messages = await worker.receive('fan-echo', AGENT_BATCH, 1);
      if (messages.length === 0) continue;
      await worker.call('POST', '/api/v1/messaging/acknowledge', { message_ids: messages.map((m) => m.message_id) });
      acked += messages.length;
    }
  });
  let completed = 0;
  while (Date.now() < deadline) {
    completed = (await admin.call('GET', '/api/v1/coordination/runs?status=completed&limit=1')).meta.total;
    if (completed >= FAN_RUNS) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const elapsed = (performance.now() - started) / 1000;
  stop = true;
  await Promise.all(loops);
  if (completed < FAN_RUNS) throw new Error(`only ${completed} of ${FAN_RUNS} fan-out runs completed within the time limit`);
  return {
    createRate,
    elapsed,
    stepsPerSecond: (FAN_RUNS * FAN_STEPS) / elapsed,
    acked,
    cpuPerStepMs: (server.cpuMs() - cpuBefore) / (FAN_RUNS * FAN_STEPS),
  };
}

/**
 * A table row comparing fan-out figures without and with something (per round, then medians): steps/s and its cost
 * (1 − with ÷ without), server CPU per step and its cost (with ÷ without − 1).
 */
export function fanOutCostRow(storage: string, without: FanOutFigure[], withIt: FanOutFigure[]): string {
  const median = (figures: FanOutFigure[], field: 'stepsPerSecond' | 'cpuPerStepMs') =>
    percentile(
      figures.map((f) => f[field]),
      50,
    );
  const rounds = (figures: FanOutFigure[]) => figures.map((f) => fmt(f.stepsPerSecond)).join(', ');
  const [steps, stepsWith] = [median(without, 'stepsPerSecond'), median(withIt, 'stepsPerSecond')];
  const [cpu, cpuWith] = [median(without, 'cpuPerStepMs'), median(withIt, 'cpuPerStepMs')];
  return `| ${storage} | ${rounds(without)} | ${rounds(withIt)} | ${fmt(steps)} / ${fmt(stepsWith)} (**${fmt((1 - stepsWith / steps) * 100, 1)}%**) | ${fmt(cpu, 3)} / ${fmt(cpuWith, 3)} (**${fmt((cpuWith / cpu - 1) * 100, 1)}%**) |`;
}

export type FanOutFigure = Awaited<ReturnType<typeof fanOut>>;

/**
 * (c) An event trigger on `bench.orders.*` starts a one-step plan (its agent step's message is
 * sent; no agent consumes it). The publish request returns once the triggered runs are
 * committed, so its latency is publish → run started: first one publish at a time, then
 * autocannon at 16 connections for 10 s; every run is counted afterwards.
 */
async function eventTriggers(server: SwitchboardProcess) {
  const { admin } = await setup(server, 'trigger-target');
  await admin.call('POST', '/api/v1/coordination/plans', {
    alias: 'on-order',
    steps: [{ id: 'handle', type: 'agent', agent: 'trigger-target', input: { order: '{{input.order}}' } }],
  });
  const trigger = (
    await admin.call('POST', '/api/v1/coordination/triggers', {
      plan_id: 'on-order',
      type: 'event',
      config: { topic: 'bench.orders.*' },
      input_mapping: { order: '{{event.id}}' },
    })
  ).data;
  const latencies: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const t0 = performance.now();
    await admin.call('POST', '/api/v1/messaging/publish', { topic: 'bench.orders.paid', payload: { id: `o-${i}` } });
    if (i >= 100) latencies.push(performance.now() - t0);
  }
  const runsBefore = (await admin.call('GET', '/api/v1/coordination/runs?plan_id=on-order&limit=1')).meta.total as number;
  const cpuBefore = server.cpuMs();
  const burst = await load({
    url: `${server.url}/api/v1/messaging/publish`,
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ topic: 'bench.orders.paid', payload: { id: 'burst' } }),
    connections: 16,
    duration: 10,
  });
  const cpu = server.cpuMs() - cpuBefore;
  const runsAfter = (await admin.call('GET', '/api/v1/coordination/runs?plan_id=on-order&limit=1')).meta.total as number;
  const fires = (await admin.call('GET', `/api/v1/coordination/triggers/${trigger.id}/fires?limit=1`)).meta.total as number;
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    rps: burst.rps,
    publishes: burst.requests,
    non2xx: burst.non2xx + burst.errors,
    runs: runsAfter - runsBefore,
    runsPerSecond: (runsAfter - runsBefore) / 10,
    burstP99: burst.p99,
    cpuPerRunMs: cpu / (runsAfter - runsBefore),
    fires,
  };
}

export default async function coordination(): Promise<void> {
  const load = os.loadavg()[0]!;
  const rows: string[] = [];
  const fan: Record<string, Awaited<ReturnType<typeof fanOut>>> = {};
  let seq: Awaited<ReturnType<typeof sequential>> | undefined;
  let events: Awaited<ReturnType<typeof eventTriggers>> | undefined;
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const server = await startSwitchboard({ dialect });
    try {
      if (dialect === 'sqlite') {
        seq = await sequential(server);
        events = await eventTriggers(server);
      }
      fan[dialect] = await fanOut(server);
    } finally {
      await server.stop();
    }
    const f = fan[dialect]!;
    rows.push(`| ${dialect} | ${fmt(f.createRate)} | ${fmt(f.elapsed, 2)} | **${fmt(f.stepsPerSecond)}** | ${fmt(f.cpuPerStepMs, 2)} |`);
    console.log(dialect, f);
  }
  console.log('sequential', seq, 'events', events);
  const s = seq!;
  const e = events!;
  const overhead = s.hopP50 - s.plainP50;
  record(
    'coordination',
    `## Coordination (issues 7, 8): sequential steps, fan-out/fan-in runs, event triggers

Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench -- coordination\` (${new Date().toISOString().slice(0, 10)}).
1-minute load average at the start: ${fmt(load, 2)} (the machine is shared).

### (a) 100-step sequential plan, one echo agent over HTTP (SQLite)

${SEQUENTIAL_RUNS} runs after a warm-up run (${s.hops} hops). A hop: the agent sends the acknowledgement of step k and
long-polls until it holds step k+1 (the engine completes k, resolves k+1's templates and sends its message inside the
acknowledgement's transaction). Plain messaging, same agent and server: acknowledge a message, receive the next one already waiting.

| | p50 ms | p99 ms |
|---|---:|---:|
| plan step hop (ack → next step in hand) | ${fmt(s.hopP50, 2)} | ${fmt(s.hopP99, 2)} |
| plain messaging hop (ack → next message in hand) | ${fmt(s.plainP50, 2)} | ${fmt(s.plainP99, 2)} |

Per-step engine overhead (hop p50 − plain p50): **${fmt(overhead, 2)} ms** (target ≤ 3 ms). A whole 100-step run: ${fmt(s.runMs)} ms (median).

### (b) ${fmt(FAN_RUNS)} concurrent runs of split → (a, b, c) → join (5 agent steps each)

The runs are started first (16 clients; the first step of each is sent), then ${AGENT_WORKERS} loops of one echo agent receive up to
${AGENT_BATCH} messages and acknowledge them as one batch (message_ids) until every run has completed.

| storage | runs started/s | drain s | steps/s | server CPU ms/step |
|---|---:|---:|---:|---:|
${rows.join('\n')}

Target ≥ 1,000 steps/s on each.

### (c) Event triggers (issue 8), SQLite

An event trigger on \`bench.orders.*\` starts a one-step plan (its agent message is sent; nothing consumes it). The publish
request returns after the triggered runs are committed, so its latency is publish → run started. Events published
together (in one turn of the server's event loop, or while a batch commits) start their runs in one transaction.

| | figure |
|---|---:|
| publish → run started, one at a time (900 after 100 warm-up): p50 / p99 | ${fmt(e.p50, 2)} ms / **${fmt(e.p99, 2)} ms** |
| 16 connections for 10 s: publishes/s (autocannon, non-2xx ${e.non2xx}), p99 | ${fmt(e.rps)}, ${fmt(e.burstP99)} ms |
| runs started in those 10 s (counted in the database) | ${fmt(e.runs)} = **${fmt(e.runsPerSecond)} runs/s** |
| server CPU per run started (the whole request: HTTP, publish, run, commit) | ${fmt(e.cpuPerRunMs, 2)} ms |

Targets: p99 ≤ 20 ms; ≥ 1,000 event-triggered runs/s sustained.
`,
  );
}
