/**
 * `npm run bench -- rerun`: rerunning the last step of a 100-step run against starting a one-step
 * run, on SQLite and PostgreSQL. Both plans are transform steps (no agent in the loop), so the
 * figures are the platform's own work: for the rerun, reading the earlier run, copying the 99
 * steps it keeps and running the last. Sequential, after a warm-up; p50 from the request to the
 * run's completion, and the server's CPU per run.
 */
import { adminPost, fmt, machine, median, record, startSwitchboard, type SwitchboardProcess } from './lib.js';

const STEPS = 100;
const REPEATS = 51;
const WARM_UP = 5;

async function runOf(server: SwitchboardProcess, id: string): Promise<{ status: string }> {
  const res = await fetch(`${server.url}/api/v1/coordination/runs/${id}`, { headers: { authorization: `Bearer ${server.adminKey}` } });
  return ((await res.json()) as { data: { status: string } }).data;
}

/** Starts a run with `start` (its answer: the run) and waits for it to complete; ms. */
async function timed(server: SwitchboardProcess, start: () => Promise<{ data: { id: string; status?: string } }>): Promise<number> {
  const started = performance.now();
  const { data } = await start();
  let status = data.status;
  while (status !== 'completed') {
    if (status === 'failed' || status === 'cancelled') throw new Error(`run ${data.id} ${status}`);
    await new Promise((resolve) => setImmediate(resolve));
    status = (await runOf(server, data.id)).status;
  }
  return performance.now() - started;
}

async function figure(server: SwitchboardProcess, start: () => Promise<{ data: { id: string; status?: string } }>) {
  for (let i = 0; i < WARM_UP; i++) await timed(server, start);
  const cpu = server.cpuMs();
  const times: number[] = [];
  for (let i = 0; i < REPEATS; i++) times.push(await timed(server, start));
  return { p50: median(times), cpu: (server.cpuMs() - cpu) / REPEATS };
}

export default async function rerun(): Promise<void> {
  const lines = [
    `${machine()}.`,
    '',
    `### Rerunning the last step of a ${STEPS}-step run against starting a one-step run (transform steps; ${REPEATS} sequential runs after ${WARM_UP}; until completed)`,
    '',
    '| backend | one-step run p50 ms | rerun of the last step p50 ms | ratio | server CPU ms per one-step run | per rerun |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const dialect of ['sqlite', 'postgres'] as const) {
    if (dialect === 'postgres' && !process.env.SWITCHBOARD_TEST_DATABASE_URL) continue;
    const server = await startSwitchboard({ dialect });
    try {
      const chain = Array.from({ length: STEPS }, (_, i) => ({
        id: `s${i}`,
        type: 'transform',
        output: { n: i },
        ...(i > 0 && { depends_on: [`s${i - 1}`] }),
      }));
      const long = await adminPost(server, '/api/v1/coordination/plans', { alias: 'rerun-long', steps: chain });
      const short = await adminPost(server, '/api/v1/coordination/plans', { alias: 'rerun-short', steps: chain.slice(0, 1) });
      const earlier = await adminPost(server, '/api/v1/coordination/runs', { plan_id: long.data.id, input: {} });
      await timed(server, async () => earlier as { data: { id: string } });
      const one = await figure(server, () => adminPost(server, '/api/v1/coordination/runs', { plan_id: short.data.id, input: {} }));
      const again = await figure(server, () =>
        adminPost(server, `/api/v1/coordination/runs/${earlier.data.id}/rerun`, { from_step: `s${STEPS - 1}` }),
      );
      lines.push(
        `| ${dialect} | ${fmt(one.p50, 2)} | ${fmt(again.p50, 2)} | ${fmt(again.p50 / one.p50, 2)} | ${fmt(one.cpu, 2)} | ${fmt(again.cpu, 2)} |`,
      );
    } finally {
      await server.stop();
    }
  }
  lines.push('', `Target: a rerun of the last step of a ${STEPS}-step run takes < 2× a one-step run.`, '');
  record('rerun', lines.join('\n'));
  console.log(lines.join('\n'));
}
