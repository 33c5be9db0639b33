/**
 * `npm run bench -- tracing`: the end-to-end loop of the messaging suite's (b) (4 producers, 4
 * consumers, SQLite) against servers with tracing off and on, interleaved: msg/s and the
 * server's CPU per message (the 2 cores are shared with the bench client, so msg/s moves).
 * The traced servers export every span over OTLP/HTTP to a collector stub on 127.0.0.1 that
 * reads and drops them.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { fmt, machine, median, record, startSwitchboard, type SwitchboardProcess } from './lib.js';
import { E2E_SECONDS, endToEnd, SEND_BATCH, switchboardQueue } from './messaging.js';

/** An OTLP/HTTP collector on 127.0.0.1 that reads every export and drops it; counts the bytes. */
async function collectorStub(): Promise<{ url: string; bytes: () => number; close: () => Promise<void> }> {
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A tracing setting: the environment of its server, and what the table calls it. */
const TRACING_SETTINGS = [
  { name: 'off (OTEL_* unset)', env: (_collector: string): Record<string, string> => ({}) },
  { name: 'on, every trace sampled (the OTel default)', env: (collector: string) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: collector }) },
  {
    name: 'on, 1 trace in 10 (`parentbased_traceidratio`, 0.1)',
    env: (collector: string) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
    }),
  },
];

export default async function tracing(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const lines = [`${machine()}.`, '', ...(await tracingCost())];
  lines.push(`1-minute load average ${fmt(loadBefore, 2)} at the start, ${fmt(os.loadavg()[0]!, 2)} at the end.`);
  record('tracing', lines.join('\n'));
  console.log(lines.join('\n'));
}

async function tracingCost(): Promise<string[]> {
  const collector = await collectorStub();
  const servers: SwitchboardProcess[] = [];
  try {
    for (const setting of TRACING_SETTINGS) {
      servers.push(
        await startSwitchboard({ dialect: 'sqlite', env: { OTEL_SERVICE_NAME: 'switchboard-bench', ...setting.env(collector.url) } }),
      );
    }
    const queues = servers.map((server, i) => switchboardQueue(server, String(i)));
    const samples = servers.map(() => ({
      single: [] as number[],
      batched: [] as number[],
      singleCpu: [] as number[],
      batchedCpu: [] as number[],
    }));
    const measure = async (i: number, batch: number, seconds: number) => {
      const before = servers[i]!.cpuMs();
      const rate = await endToEnd(queues[i]!, seconds, batch);
      return { rate, cpuUs: ((servers[i]!.cpuMs() - before) * 1000) / Math.max(1, rate * seconds) };
    };
    for (let i = 0; i < servers.length; i++) {
      await measure(i, 1, 1);
      await measure(i, SEND_BATCH, 1);
    }
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < servers.length; i++) {
        const single = await measure(i, 1, E2E_SECONDS);
        const batched = await measure(i, SEND_BATCH, E2E_SECONDS);
        samples[i]!.single.push(single.rate);
        samples[i]!.singleCpu.push(single.cpuUs);
        samples[i]!.batched.push(batched.rate);
        samples[i]!.batchedCpu.push(batched.cpuUs);
      }
    }
    const rows = samples.map((s) => ({
      single: median(s.single),
      batched: median(s.batched),
      singleCpu: median(s.singleCpu),
      batchedCpu: median(s.batchedCpu),
    }));
    const off = rows[0]!;
    const change = (value: number, base: number) =>
      value === base ? '' : ` (${value > base ? '+' : ''}${fmt((value / base - 1) * 100, 1)}%)`;
    return [
      `### Tracing off vs on: the messaging suite's loop of (b), SQLite, 2 interleaved rounds of ${E2E_SECONDS} s, medians (OTLP/HTTP protobuf to a stub collector on 127.0.0.1 that drops spans; ${fmt(collector.bytes() / 1024 ** 2, 1)} MiB exported)`,
      '',
      `| tracing | single sends msg/s | server CPU µs/msg | send-batch of ${SEND_BATCH} msg/s | server CPU µs/msg |`,
      '|---|---:|---:|---:|---:|',
      ...rows.map(
        (row, i) =>
          `| ${TRACING_SETTINGS[i]!.name} | ${fmt(row.single)}${change(row.single, off.single)} | ${fmt(row.singleCpu)}${change(row.singleCpu, off.singleCpu)} | ${fmt(row.batched)}${change(row.batched, off.batched)} | ${fmt(row.batchedCpu, 1)}${change(row.batchedCpu, off.batchedCpu)} |`,
      ),
      '',
      'Target: on ≤ 15% below off; off within noise of (b).',
      '',
    ];
  } finally {
    for (const server of servers) await server.stop();
    await collector.close();
  }
}
