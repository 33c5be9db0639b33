/**
 * Issue 35: what the authorization point and the audit append cost. This build against another
 * built checkout from before access control (`SWITCHBOARD_BENCH_BEFORE=/path/to/checkout`, with
 * `npm ci && npm run build` run there), interleaved in one run on the same figures:
 * the foundation read (authorized, not audited), the messaging send (authorized, not audited) and
 * a task PATCH (authorized, owner-checked and audited in its transaction) on SQLite and PostgreSQL.
 * Target: ≤ 5% on the first two. 127.0.0.1 only; every phase bounded in time.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import type autocannon from 'autocannon';
import type { Dialect } from '../test/helpers/database.js';
import {
  compare,
  fmt,
  machine,
  record,
  ROOT,
  startSwitchboard,
  type LoadOptions,
  type LoadResult,
  type SwitchboardProcess,
} from './lib.js';

const TASKS = 1_000;
const ROUNDS = 6;

async function call(
  server: SwitchboardProcess,
  method: string,
  url: string,
  body: unknown,
): Promise<{ data: { id?: string; key?: string } }> {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201 && res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { data: { id?: string; key?: string } };
}

/** The three figures' load options against one server, after seeding its tasks and an agent key. */
async function figures(server: SwitchboardProcess): Promise<{ read: LoadOptions; send: LoadOptions; patch: LoadOptions }> {
  const agentKey = (await call(server, 'POST', '/api/v1/auth/keys', { agent_id: 'bench-producer' })).data.key!;
  const project = (await call(server, 'POST', '/core/api/v1/projects', { name: 'bench' })).data.id!;
  const tasks: string[] = [];
  for (let i = 0; i < TASKS; i++)
    tasks.push((await call(server, 'POST', '/core/api/v1/tasks', { title: `task ${i}`, project_id: project })).data.id!);
  let n = 0;
  const patchRequest: autocannon.Request = {
    method: 'PATCH',
    setupRequest: (req) => ({ ...req, path: `/core/api/v1/tasks/${tasks[n % TASKS]}`, body: JSON.stringify({ title: `renamed ${n++}` }) }),
  };
  const admin = { authorization: `Bearer ${server.adminKey}` };
  const common = { connections: 50, duration: 5, serverCpuMs: server.cpuMs };
  return {
    read: { ...common, url: `${server.url}/api/v1/auth/keys?limit=1`, headers: admin },
    send: {
      ...common,
      url: `${server.url}/api/v1/messaging/send`,
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ destination: 'bench-consumer', event_name: 'bench', payload: { x: 1 } }),
    },
    patch: {
      ...common,
      url: `${server.url}/core/api/v1/tasks`,
      method: 'PATCH',
      headers: { ...admin, 'content-type': 'application/json' },
      requests: [patchRequest],
    },
  };
}

function checked(label: string, result: LoadResult): LoadResult {
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${label}: ${result.non2xx} non-2xx and ${result.errors} errors`);
  return result;
}

function commitOf(root: string): string {
  return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
}

export default async function accessControl(): Promise<void> {
  const before = process.env.SWITCHBOARD_BENCH_BEFORE;
  if (!before) {
    console.log(
      'access-control: set SWITCHBOARD_BENCH_BEFORE to a built checkout from before access control (e.g. 31aeae4, built against this checkout node_modules, so that only the code differs); skipped',
    );
    return;
  }
  const rows: string[] = [];
  const pair = async (dialect: Dialect, names: ('read' | 'send' | 'patch')[], labels: Record<string, string>) => {
    const old = await startSwitchboard({ dialect, root: path.resolve(before) });
    const now = await startSwitchboard({ dialect });
    try {
      const [a, b] = [await figures(old), await figures(now)];
      for (const name of names) {
        const result = await compare(a[name], b[name], ROUNDS);
        const [x, y] = [checked(`before ${name}`, result.a), checked(`after ${name}`, result.b)];
        const change = (later: number, earlier: number) => `${later >= earlier ? '+' : ''}${fmt(((later - earlier) / earlier) * 100, 1)}%`;
        rows.push(
          `| ${labels[name]} | ${fmt(x.rps)} | ${fmt(y.rps)} | ${change(y.rps, x.rps)} | ${fmt(x.cpuUs!)} | ${fmt(y.cpuUs!)} | ${change(y.cpuUs!, x.cpuUs!)} |`,
        );
        console.log(rows.at(-1));
      }
    } finally {
      await Promise.all([old.stop(), now.stop()]);
    }
  };
  const loadAtStart = os.loadavg()[0]!;
  await pair('sqlite', ['read', 'send', 'patch'], {
    read: 'GET /api/v1/auth/keys?limit=1 (admin key), SQLite — foundation',
    send: 'POST /api/v1/messaging/send (agent key), SQLite — messaging (a)',
    patch: 'PATCH a task title (admin key), SQLite — audited',
  });
  await pair('postgres', ['send', 'patch'], {
    send: 'POST /api/v1/messaging/send (agent key), PostgreSQL',
    patch: 'PATCH a task title (admin key), PostgreSQL — audited, appends serialized',
  });
  const lines = [
    '## Access control (issue 35): the authorization point and the audit append, before/after',
    '',
    `Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_BENCH_BEFORE=<checkout of ${commitOf(path.resolve(before))}, built> SWITCHBOARD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench -- access-control\` at ${commitOf(ROOT)} (${new Date().toISOString().slice(0, 10)}).`,
    `Before: ${commitOf(path.resolve(before))}, the last commit without permissions, ownership or the audit log. Each figure: 2 s warm-up of each side, then ${ROUNDS} interleaved rounds of 5 s at 50 connections; medians. ${TASKS} tasks in one project, PATCHed in turn.`,
    '',
    '| figure | before req/s | after req/s | change | before CPU µs/req | after CPU µs/req | change |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Target: ≤ 5% on the foundation and messaging figures. 1-minute load average ${loadAtStart.toFixed(2)} at the start, ${os.loadavg()[0]!.toFixed(2)} at the end.`,
  ];
  record('access-control', lines.join('\n'));
  console.log(lines.join('\n'));
}
