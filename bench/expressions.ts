/**
 * What evaluating JSONata costs the coordination engine: (a) runs of a plan made only of
 * transform and condition steps (each run completes inside its POST /runs request), and
 * (b) an event trigger whose filter is evaluated on every publish. SQLite and PostgreSQL for
 * (a), SQLite for (b). Prints its figures (RESULTS.md keeps a before/after table written by hand).
 * 127.0.0.1 only; every phase is bounded in count and time.
 */
import os from 'node:os';
import { fmt, load, percentile, startSwitchboard, type SwitchboardProcess } from './lib.js';

const SEQUENTIAL = 300;
const WARMUP = 50;
const BURST_S = 10;
const CONNECTIONS = 16;

async function call(
  server: SwitchboardProcess,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ data: Record<string, unknown>; meta: { total: number } }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${server.adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as { data: Record<string, unknown>; meta: { total: number } };
}

/** One request at a time (after a warm-up), then CONNECTIONS connections for BURST_S seconds. */
async function measure(server: SwitchboardProcess, path: string, body: unknown) {
  const latencies: number[] = [];
  for (let i = 0; i < SEQUENTIAL + WARMUP; i++) {
    const t0 = performance.now();
    await call(server, 'POST', path, body);
    if (i >= WARMUP) latencies.push(performance.now() - t0);
  }
  const burst = await load({
    url: `${server.url}${path}`,
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    connections: CONNECTIONS,
    duration: BURST_S,
    serverCpuMs: () => server.cpuMs(),
  });
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    rps: burst.rps,
    burstP99: burst.p99,
    non2xx: burst.non2xx + burst.errors,
    cpuUs: burst.cpuUs ?? Number.NaN,
  };
}

/** (a) double → check (condition) → big | small: three expressions per run. */
async function expressionRuns(server: SwitchboardProcess) {
  await call(server, 'POST', '/api/v1/coordination/plans', {
    alias: 'expressions',
    steps: [
      { id: 'double', type: 'transform', expression: 'input.n * 2' },
      { id: 'check', type: 'condition', expression: 'steps.double.output > 10', then: 'big', else: 'small', depends_on: ['double'] },
      { id: 'big', type: 'transform', expression: '{ "size": "big", "n": steps.double.output }' },
      { id: 'small', type: 'transform', expression: '{ "size": "small" }' },
    ],
  });
  const result = await measure(server, '/api/v1/coordination/runs', { plan_id: 'expressions', input: { n: 7 } });
  const completed = (await call(server, 'GET', '/api/v1/coordination/runs?plan_id=expressions&status=completed&limit=1')).meta.total;
  return { ...result, completed };
}

/** (b) An event trigger with a filter on every publish (the plan's one step is a transform). */
async function filteredTrigger(server: SwitchboardProcess) {
  await call(server, 'POST', '/api/v1/coordination/plans', {
    alias: 'on-paid',
    steps: [{ id: 'note', type: 'transform', output: { order: '{{input.order}}' } }],
  });
  await call(server, 'POST', '/api/v1/coordination/triggers', {
    plan_id: 'on-paid',
    type: 'event',
    config: { topic: 'bench.paid.*', filter: 'event.amount > 10' },
    input_mapping: { order: '{{event.id}}' },
  });
  return measure(server, '/api/v1/messaging/publish', { topic: 'bench.paid.eu', payload: { id: 'o-1', amount: 12 } });
}

export default async function expressions(): Promise<void> {
  console.log('1-minute load average at the start', fmt(os.loadavg()[0]!, 2));
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const server = await startSwitchboard({ dialect });
    try {
      console.log(dialect, 'expression runs', await expressionRuns(server));
      if (dialect === 'sqlite') console.log(dialect, 'filtered trigger', await filteredTrigger(server));
    } finally {
      await server.stop();
    }
  }
}
