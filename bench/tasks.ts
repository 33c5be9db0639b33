/**
 * Issue 6: 100,000 tasks in 100 projects created through the API, then (a) list by project and
 * status — target p99 ≤ 20 ms — and (b) task PATCH throughput against a bare Fastify
 * hello-world in the same run — target ≥ 40%. SQLite (the embedded default); 127.0.0.1 only,
 * every phase bounded in count or time.
 */
import os from 'node:os';
import type autocannon from 'autocannon';
import {
  compare,
  fmt,
  load,
  machine,
  percentile,
  record,
  startBaseline,
  startSwitchboard,
  type SwitchboardProcess,
  adminPost as post,
} from './lib.js';

const PROJECTS = 100;
const TASKS = 100_000;
const STATUSES = ['todo', 'in_progress', 'done'];
const PRIORITIES = ['none', 'low', 'medium', 'high', 'urgent'];
const CORE = '/core/api/v1';

/** Creates the projects and tasks through the API with `workers` concurrent clients; returns ids and the create rate. */
async function seed(
  server: SwitchboardProcess,
  workers: number,
): Promise<{ projects: string[]; tasks: string[]; rate: number; latency: { p50: number; p99: number } }> {
  const projects: string[] = [];
  for (let i = 0; i < PROJECTS; i++) projects.push((await post(server, `${CORE}/projects`, { name: `project ${i}` })).data.id);
  const tasks: string[] = [];
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = next++; i < TASKS; i = next++) {
        const t0 = performance.now();
        const created = await post(server, `${CORE}/tasks`, {
          title: `task ${i}`,
          description: 'seeded by bench/tasks.ts',
          project_id: projects[i % PROJECTS],
          status: STATUSES[Math.floor(i / PROJECTS) % STATUSES.length],
          priority: PRIORITIES[i % PRIORITIES.length],
          assigned_to: `agent-${i % 50}`,
        });
        times.push(performance.now() - t0);
        tasks.push(created.data.id);
      }
    }),
  );
  const rate = TASKS / ((performance.now() - started) / 1000);
  return { projects, tasks, rate, latency: { p50: percentile(times, 50), p99: percentile(times, 99) } };
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

export default async function tasks(): Promise<void> {
  const baseline = await startBaseline('hello.ts');
  const server = await startSwitchboard({ dialect: 'sqlite' });
  try {
    const auth = { authorization: `Bearer ${server.adminKey}` };
    const loadBefore = os.loadavg()[0]!;
    const seeded = await seed(server, 32);

    // (a) list by project and status: a random project and status per request.
    const listRequest: autocannon.Request = {
      method: 'GET',
      setupRequest: (req) => ({ ...req, path: `${CORE}/tasks?project_id=${pick(seeded.projects)}&status=${pick(STATUSES)}&limit=50` }),
    };
    const listUrl = `${server.url}${CORE}/tasks`;
    await load({ url: listUrl, headers: auth, connections: 10, duration: 2, requests: [listRequest] });
    const list1 = await load({ url: listUrl, headers: auth, connections: 1, duration: 10, requests: [listRequest] });
    const list10 = await load({ url: listUrl, headers: auth, connections: 10, duration: 10, requests: [listRequest] });
    const list50 = await load({ url: listUrl, headers: auth, connections: 50, duration: 10, requests: [listRequest] });

    // (b) PATCH a random task's title (always a real change: an update and an activity entry).
    let n = 0;
    const patchRequest: autocannon.Request = {
      method: 'PATCH',
      setupRequest: (req) => ({ ...req, path: `${CORE}/tasks/${pick(seeded.tasks)}`, body: JSON.stringify({ title: `renamed ${n++}` }) }),
    };
    const { a, b } = await compare(
      { url: `${baseline.url}/`, connections: 50, duration: 10 },
      {
        url: `${server.url}${CORE}/tasks`,
        method: 'PATCH',
        headers: { ...auth, 'content-type': 'application/json' },
        connections: 50,
        duration: 10,
        requests: [patchRequest],
      },
    );
    // The shared request path alone (auth, rate limit, metrics, envelope; no database): the
    // ceiling any authenticated route reaches on this machine, for reading the ratio above.
    const whoami = await load({ url: `${server.url}/api/v1/auth/whoami`, headers: auth, connections: 50, duration: 10 });
    // A bare route doing one SQLite write (one row among as many as there are tasks): the ratio
    // against a route doing the same kind of work, beside the one against hello-world.
    const updateBaseline = await startBaseline('sqlite-update.ts', { BASELINE_AGENTS: String(TASKS) });
    let u = 0;
    const update = await load({
      url: `${updateBaseline.url}/`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      connections: 50,
      duration: 10,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => ({ ...req, body: JSON.stringify({ agent_id: `bench-agent-${u++ % TASKS}`, load: 0.5 }) }),
        },
      ],
    });
    await updateBaseline.stop();
    for (const [name, run] of [
      ['list (1)', list1],
      ['list (10)', list10],
      ['list (50)', list50],
      ['patch', b],
      ['whoami', whoami],
      ['update', update],
    ] as const) {
      if (run.non2xx > 0 || run.errors > 0) throw new Error(`${name}: ${run.non2xx} non-2xx and ${run.errors} errors`);
    }

    const lines = [
      '## Tasks (issue 6): 100,000 tasks in 100 projects',
      '',
      `Machine: ${machine()}. Command: \`npm run build && npm run bench -- tasks\` (${new Date().toISOString().slice(0, 10)}). SQLite.`,
      `1-minute load average ${fmt(loadBefore, 2)} at the start, ${fmt(os.loadavg()[0]!, 2)} at the end (the machine is shared: other work runs beside the benchmark).`,
      '',
      `Seeding: ${fmt(TASKS)} POST /core/api/v1/tasks from 32 concurrent clients (each with project, status, priority, assignee): **${fmt(seeded.rate)} tasks/s**, p50 ${fmt(seeded.latency.p50, 1)} ms, p99 ${fmt(seeded.latency.p99, 1)} ms.`,
      '',
      '### (a) GET /core/api/v1/tasks?project_id=…&status=…&limit=50 (random project and status per request; ~333 matches each, total counted)',
      '',
      '| connections | req/s | p50 ms | p99 ms |',
      '|---:|---:|---:|---:|',
      `| 1 | ${fmt(list1.rps)} | ${list1.p50} | ${list1.p99} |`,
      `| 10 | ${fmt(list10.rps)} | ${list10.p50} | ${list10.p99} |`,
      `| 50 | ${fmt(list50.rps)} | ${list50.p50} | ${list50.p99} |`,
      '',
      `p99: **${list1.p99} ms** one request at a time, **${list10.p99} ms** at 10 connections (target ≤ 20 ms). Beyond one connection the latency is mostly queueing: the server is one event loop and shares the 2 cores with autocannon.`,
      '',
      '### (b) PATCH /core/api/v1/tasks/{random id} {title} vs bare Fastify, same run (50 connections, 2 s warm-up, 2 interleaved 10 s rounds, medians)',
      '',
      '| target | req/s | p50 ms | p99 ms |',
      '|---|---:|---:|---:|',
      `| bare Fastify hello-world | ${fmt(a.rps)} | ${a.p50} | ${a.p99} |`,
      `| PATCH task title (admin key, SQLite; update + activity entry in one transaction) | ${fmt(b.rps)} | ${b.p50} | ${b.p99} |`,
      `| reference: GET /api/v1/auth/whoami (same server, no database; one 10 s run after) | ${fmt(whoami.rps)} | ${whoami.p50} | ${whoami.p99} |`,
      `| reference: bare Fastify POST + one SQLite update of ${fmt(TASKS)} rows (one 10 s run after) | ${fmt(update.rps)} | ${update.p50} | ${update.p99} |`,
      '',
      `Ratio: **${fmt((b.rps / a.rps) * 100, 1)}%** of the baseline's requests/s (target ≥ 40%); the authenticated no-database route reaches ${fmt((whoami.rps / a.rps) * 100, 1)}%, PATCH ${fmt((b.rps / whoami.rps) * 100, 1)}% of that. Against the bare route with one SQLite update, PATCH reaches ${fmt((b.rps / update.rps) * 100, 1)}%.`,
    ];
    record('tasks', lines.join('\n'));
    console.log(lines.join('\n'));
  } finally {
    await server.stop();
    await baseline.stop();
  }
}
