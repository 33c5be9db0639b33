/**
 * Issue 22: what the event log costs and carries. (a) The fan-out/fan-in runs of the
 * coordination bench with the log on and off (SWITCHBOARD_BENCH_EVENT_LOG=off, a switch for
 * benchmarks only), in one run, on SQLite and PostgreSQL: target ≤ 10% fewer steps/s with
 * the log. (b) One SSE subscriber replaying the log those runs wrote (a backlog read in
 * batches of 500): target ≥ 5,000 events/s. (c) 100 idle subscribers: server CPU over 10 s.
 * 127.0.0.1 only; every phase is bounded in count and time.
 */
import os from 'node:os';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { fanOut, fanOutCostRow, type FanOutFigure } from './coordination.js';
import { fmt, machine, record, startSwitchboard, type SwitchboardProcess } from './lib.js';

/** Fan-out runs per mode and dialect, alternating off and on: the machine is shared, one pair proves little. */
const ROUNDS = 3;
const IDLE_STREAMS = 100;
const IDLE_MS = 10_000;
const PHASE_LIMIT_MS = 120_000;

function stream(server: SwitchboardProcess, query: string, signal: AbortSignal) {
  return fetch(`${server.url}/api/v1/events/stream?${query}`, { headers: { authorization: `Bearer ${server.adminKey}` }, signal });
}

/** (b) Reads every event from the start of the log through one stream; events per second. */
async function replay(server: SwitchboardProcess): Promise<{ events: number; perSecond: number }> {
  const list = await fetch(`${server.url}/api/v1/events?limit=1`, { headers: { authorization: `Bearer ${server.adminKey}` } });
  const total = ((await list.json()) as { meta: { total: number } }).meta.total;
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), PHASE_LIMIT_MS);
  const started = performance.now();
  let events = 0;
  try {
    const response = await stream(server, 'after=evt_0000000000000', stop.signal);
    const messages = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
    for await (const _ of messages) if (++events >= total) break;
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
  if (events < total) throw new Error(`the stream carried ${events} of ${total} events within the time limit`);
  return { events, perSecond: events / ((performance.now() - started) / 1000) };
}

/** Server CPU over IDLE_MS, in % of one core. */
async function cpuOver(server: SwitchboardProcess): Promise<number> {
  const before = server.cpuMs();
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  return ((server.cpuMs() - before) / IDLE_MS) * 100;
}

/**
 * (c) Server CPU while IDLE_STREAMS subscribers wait with nothing to tell them, and before
 * they opened (the workers' own passes): % of one core.
 */
async function idle(server: SwitchboardProcess): Promise<{ without: number; with: number }> {
  const without = await cpuOver(server);
  const stop = new AbortController();
  const responses = await Promise.all(
    Array.from({ length: IDLE_STREAMS }, async (_, i) => {
      // Ten principals' worth of streams: the per-principal limit is 10.
      const key = (
        (await (
          await fetch(`${server.url}/api/v1/auth/keys`, {
            method: 'POST',
            headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ agent_id: `idle-${i % 10}`, role: 'agent' }),
          })
        ).json()) as { data: { key: string } }
      ).data.key;
      return fetch(`${server.url}/api/v1/events/stream`, { headers: { authorization: `Bearer ${key}` }, signal: stop.signal });
    }),
  );
  if (responses.some((r) => r.status !== 200)) throw new Error(`idle streams: ${responses.map((r) => r.status).join(',')}`);
  const withStreams = await cpuOver(server);
  stop.abort();
  return { without, with: withStreams };
}

export default async function events(): Promise<void> {
  const load = os.loadavg()[0]!;
  const rows: string[] = [];
  const streamRows: string[] = [];
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const figures: Record<'on' | 'off', FanOutFigure[]> = { on: [], off: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const log of ['off', 'on'] as const) {
        const server = await startSwitchboard({ dialect, env: { SWITCHBOARD_BENCH_EVENT_LOG: log } });
        try {
          const figure = await fanOut(server);
          figures[log].push(figure);
          console.log(dialect, log, figure);
          if (log === 'on' && round === ROUNDS - 1) {
            const replayed = await replay(server);
            const idleCpu = await idle(server);
            streamRows.push(
              `| ${dialect} | ${fmt(replayed.events)} | **${fmt(replayed.perSecond)}** | ${fmt(idleCpu.without, 2)}% | ${fmt(idleCpu.with, 2)}% |`,
            );
            console.log(dialect, 'replay', replayed, 'idle cpu %', idleCpu);
          }
        } finally {
          await server.stop();
        }
      }
    }
    rows.push(fanOutCostRow(dialect, figures.off, figures.on));
  }
  record(
    'events',
    `## Events (issue 22): the log's cost to coordination, SSE throughput, idle subscribers

Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test flock /tmp/switchboard-bench.lock npm run bench -- events\` (${new Date().toISOString().slice(0, 10)}).
1-minute load average at the start: ${fmt(load, 2)} (the machine is shared: figures move by ±10% between runs).

### (a) Coordination fan-out with and without the event log

The coordination bench's (b): 1,000 runs of split → (a, b, c) → join drained by 8 loops of one echo agent, on a fresh server
with \`SWITCHBOARD_BENCH_EVENT_LOG=off\` (nothing appended), then on one with the log (each run appends run.started, five
run.step.completed and run.completed, each in its transition's transaction; on PostgreSQL under the log's append lock),
${ROUNDS} rounds alternating. Cost: 1 − median steps/s with ÷ without; CPU: median server CPU per step with ÷ without − 1.

| storage | steps/s without, per round | steps/s with, per round | median without / with (cost) | server CPU ms/step without / with (cost) |
|---|---|---|---:|---:|
${rows.join('\n')}

Target: the log costs ≤ 10% of step throughput. With other work on the 2 cores (a 1-minute load of 8–10 in an
earlier run) steps/s swing by 2× between rounds of the same mode and the medians' difference is noise; the server's
CPU per step, which other tenants barely move, is then the measure of what the log costs each step.

### (b) One SSE subscriber; (c) ${IDLE_STREAMS} idle subscribers

(b) After (a) with the log, one \`GET /events/stream?after=…\` from the start of the log reads every event the runs wrote
(batches of 500 from the table) until it has them all. (c) ${IDLE_STREAMS} streams open (10 agents × 10) with nothing
appended for ${IDLE_MS / 1000} s: the server's CPU over that time (keep-alive every 15 s), beside the same time just
before they opened (the server's own workers), in % of one core.

| storage | events | events/s to one subscriber | server CPU idle, no stream | with ${IDLE_STREAMS} idle streams |
|---|---:|---:|---:|---:|
${streamRows.join('\n')}

Targets: ≥ 5,000 events/s to one subscriber; ${IDLE_STREAMS} idle subscribers ≤ 1% CPU (what the streams add to the idle server).
`,
  );
}
