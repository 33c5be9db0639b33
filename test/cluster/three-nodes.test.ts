import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Api } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { keyPair, signedHeaders } from '../helpers/signing.js';
import { waitFor, within } from '../helpers/wait.js';

/**
 * Issue 24: three `switchboard serve` processes on one fresh PostgreSQL database, checked through
 * HTTP only. Needs `npm run build`. Every process this file starts is ended by its pid.
 */
const CLI = path.resolve('dist/cli.js');
const MiB = 1024 * 1024;

interface Node {
  readonly child: ChildProcess;
  readonly dataDir: string;
  readonly logs: { msg?: string; url?: string }[];
  url: string;
  exited: Promise<void>;
}

function startNode(database: TestDatabase, env: Record<string, string> = {}): { node: Promise<Node>; child: ChildProcess } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-node-'));
  const child = spawn(process.execPath, [CLI, 'serve'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      PATH: process.env.PATH,
      SWITCHBOARD_PORT: '0',
      SWITCHBOARD_LOG_LEVEL: 'info',
      SWITCHBOARD_RATE_LIMIT: '1200',
      SWITCHBOARD_DATA_DIR: dataDir,
      ...database.env,
      ...env,
    },
  });
  const logs: { msg?: string; url?: string }[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const node = new Promise<Node>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        logs.push(entry);
        if (entry.url && entry.msg === 'switchboard listening') resolve({ child, dataDir, logs, url: entry.url, exited });
      } catch {
        // not JSON
      }
    });
    void exited.then(() => reject(new Error('a node exited before listening')));
  });
  return { node: within(node, 30_000, 'a node to listen'), child };
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describeEachDialect('three nodes on one PostgreSQL database', (dialect) => {
  const cluster = dialect === 'postgres';
  const clusterIt = cluster ? it : it.skip;
  const children: ChildProcess[] = [];
  const nodes: Node[] = [];
  let database: TestDatabase;
  let adminKey: string;
  const api = (i: number) => new Api(nodes[i]!.url, adminKey);

  beforeAll(async () => {
    if (!cluster) return;
    database = await createTestDatabase('postgres');
    // At the same instant, without SWITCHBOARD_ADMIN_KEY.
    const started = [0, 1, 2].map(() => startNode(database));
    children.push(...started.map((s) => s.child));
    nodes.push(...(await Promise.all(started.map((s) => s.node))));
    const keyFiles = nodes.map((n) => path.join(n.dataDir, 'admin.key')).filter((file) => fs.existsSync(file));
    adminKey = fs.readFileSync(keyFiles[0] ?? '/dev/null', 'utf8').trim();
  }, 60_000);

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.all(nodes.map((n) => n.exited));
    for (const n of nodes) fs.rmSync(n.dataDir, { recursive: true, force: true });
    if (cluster) await database.drop();
  }, 30_000);

  clusterIt('starts together: migrations run once, one bootstrap admin key for the cluster, three nodes up', async () => {
    expect(nodes.filter((n) => n.logs.some((l) => l.msg === 'applied migrations'))).toHaveLength(1);
    expect(nodes.filter((n) => fs.existsSync(path.join(n.dataDir, 'admin.key')))).toHaveLength(1);
    expect(nodes.filter((n) => n.logs.some((l) => l.msg?.startsWith('no admin key generated')))).toHaveLength(2);
    const keys = await api(1).get('/api/v1/auth/keys?limit=500');
    expect(keys.body.data.filter((k: { role: string }) => k.role === 'admin')).toHaveLength(1);
    const listed = await api(2).get('/api/v1/cluster/nodes');
    expect(listed.body.data.map((n: { status: string }) => n.status)).toEqual(['up', 'up', 'up']);
  });

  clusterIt('serves an artifact uploaded on node 1 byte for byte from nodes 2 and 3: every version and a range', async () => {
    const v1 = new Uint8Array(Buffer.alloc(2 * MiB + 333, 7).map((_, i) => (i * 31) % 251));
    const v2 = new Uint8Array(Buffer.alloc(MiB + 1, 9));
    const form = (bytes: Uint8Array) => {
      const f = new FormData();
      f.append('file', new Blob([bytes]), 'data.bin');
      return f;
    };
    const created = await fetch(`${nodes[0]!.url}/api/v1/artifacts`, {
      method: 'POST',
      body: form(v1),
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    const updated = await fetch(`${nodes[0]!.url}/api/v1/artifacts/${id}`, {
      method: 'PUT',
      body: form(v2),
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(updated.status).toBe(200);
    for (const node of nodes.slice(1)) {
      for (const [version, bytes] of [
        [1, v1],
        [2, v2],
      ] as const) {
        const res = await fetch(`${node.url}/api/v1/artifacts/${id}/download?version=${version}`, {
          headers: { authorization: `Bearer ${adminKey}` },
        });
        expect(res.status).toBe(200);
        expect(sha256(new Uint8Array(await res.arrayBuffer()))).toBe(sha256(bytes));
      }
      const part = await fetch(`${node.url}/api/v1/artifacts/${id}/download?version=1`, {
        headers: { authorization: `Bearer ${adminKey}`, range: `bytes=${MiB - 5}-${MiB + 5}` },
      });
      expect(part.status).toBe(206);
      expect(Buffer.from(await part.arrayBuffer()).equals(Buffer.from(v1.subarray(MiB - 5, MiB + 6)))).toBe(true);
    }
  });

  clusterIt('wakes a long poll on node 2 within 250 ms (median of 5) of a send on node 1', async () => {
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const poll = api(1)
        .get('/api/v1/messaging/receive?agent_id=sleeper&timeout=10')
        .then((res) => ({ res, at: Date.now() }));
      // Time for the poll to reach node 2 and wait: a real pause, as a node process says nothing
      // when its poll waits. One not waiting yet finds the message at its first look: too short a
      // pause weakens the measure, never fails it.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const sentAt = Date.now();
      expect((await api(0).post('/api/v1/messaging/send', { destination: 'sleeper', event_name: 'ping', payload: { i } })).status).toBe(
        201,
      );
      const { res, at } = await poll;
      expect(res.body.data.messages).toHaveLength(1);
      latencies.push(at - sentAt);
    }
    latencies.sort((a, b) => a - b);
    expect(latencies[2]).toBeLessThan(250);
  });

  clusterIt('refuses on node 3 a key revoked on node 1 at the next request, and a signature replayed on another node', async () => {
    const key = await api(0).post('/api/v1/auth/keys', { agent_id: 'short-lived', role: 'agent' });
    const onNode3 = api(2).withKey(key.body.data.key);
    expect((await onNode3.get('/api/v1/auth/whoami')).status).toBe(200);
    expect((await api(0).delete(`/api/v1/auth/keys/${key.body.data.id}`)).status).toBe(200);
    expect((await onNode3.get('/api/v1/auth/whoami')).status).toBe(401);

    const { raw, privateKey } = keyPair();
    expect((await api(0).post('/api/v1/auth/agents/signer/public-keys', { public_key: raw })).status).toBe(201);
    const headers = signedHeaders(privateKey, 'signer', 'GET', '/api/v1/auth/whoami');
    expect((await fetch(`${nodes[0]!.url}/api/v1/auth/whoami`, { headers })).status).toBe(200);
    expect((await fetch(`${nodes[1]!.url}/api/v1/auth/whoami`, { headers })).status).toBe(401);
    expect((await fetch(`${nodes[2]!.url}/api/v1/auth/whoami`, { headers })).status).toBe(401);
  });

  clusterIt('spends one budget for 11 requests of one key spread over the three nodes', async () => {
    const key = await api(0).post('/api/v1/auth/keys', { agent_id: 'spender', role: 'agent' });
    for (let i = 0; i < 11; i++)
      expect(
        (
          await api(i % 3)
            .withKey(key.body.data.key)
            .get('/api/v1/auth/whoami')
        ).status,
      ).toBe(200);
    // Node-local budgets would each have seen 3 or 4 requests (1,196 left); the cluster's lost at
    // least the 11 spent, and at most what each node leased besides (slices of 12 for 1,200).
    const status = (await api(1).get('/api/v1/messaging/rate-limit?agent_id=spender')).body.data;
    expect(status.limit).toBe(1200);
    expect(status.remaining).toBeLessThanOrEqual(1200 - 10);
    expect(status.remaining).toBeGreaterThanOrEqual(1200 - 11 - 3 * 18);
  });

  clusterIt(
    'fires an every-second routine once per slot with three nodes up, and while one is killed with SIGKILL',
    async () => {
      const agent = await api(0).post('/api/v1/auth/keys', { agent_id: 'ticker', role: 'agent' });
      const routine = await api(0).post('/core/api/v1/routines', {
        name: 'tick',
        trigger_type: 'cron',
        cron_expression: '* * * * * *',
        target_agent: 'ticker',
        payload: {},
      });
      expect(routine.status).toBe(201);
      const deliveries = new Map<string, number>();
      let stop = false;
      // The agent acks promptly, through nodes 1 and 2 (node 3 is the one killed).
      const worker = (async () => {
        for (let i = 0; !stop; i++) {
          const res = await api(i % 2)
            .withKey(agent.body.data.key)
            .get('/api/v1/messaging/receive?agent_id=ticker&timeout=1&max=50');
          for (const m of res.body.data?.messages ?? []) {
            deliveries.set(m.payload.execution_id, (deliveries.get(m.payload.execution_id) ?? 0) + 1);
            await api(i % 2)
              .withKey(agent.body.data.key)
              .post('/api/v1/messaging/acknowledge', { message_id: m.message_id });
          }
        }
      })();
      const fired = async () =>
        (await api(1).get(`/core/api/v1/routines/${routine.body.data.id}/executions?limit=500`)).body.data as {
          id: string;
          scheduled_for: string;
        }[];
      let executions: Awaited<ReturnType<typeof fired>>;
      try {
        // Three slots with three nodes up, then three more with node 3 gone.
        await waitFor(async () => (await fired()).length >= 3, 10_000, 200);
        nodes[2]!.child.kill('SIGKILL');
        await nodes[2]!.exited;
        const beforeKill = (await fired()).length;
        await waitFor(async () => (await fired()).length >= beforeKill + 3, 15_000, 200);
        expect((await api(0).patch(`/core/api/v1/routines/${routine.body.data.id}`, { enabled: false })).status).toBe(200);
        // Until the agent has been delivered every fire.
        executions = await waitFor(
          async () => {
            const all = await fired();
            return all.every((e) => deliveries.has(e.id)) ? all : undefined;
          },
          10_000,
          100,
        );
      } finally {
        stop = true;
        await worker;
      }
      const slots = executions.map((e) => e.scheduled_for);
      expect(new Set(slots).size).toBe(slots.length);
      expect(slots.length).toBeGreaterThanOrEqual(6);
      for (const e of executions) expect(deliveries.get(e.id) ?? 0, e.scheduled_for).toBeLessThanOrEqual(1);
    },
    40_000,
  );

  clusterIt(
    'completes 20 two-step runs started on a node killed with SIGKILL on the other two, each step delivered once',
    async () => {
      const extra = startNode(database, { SWITCHBOARD_ADMIN_KEY: adminKey });
      children.push(extra.child);
      const doomed = await extra.node;
      nodes.push(doomed);
      const agent = await api(0).post('/api/v1/auth/keys', { agent_id: 'stepper', role: 'agent' });
      const plan = await api(0).post('/api/v1/coordination/plans', {
        alias: 'two-steps',
        steps: [
          { id: 'one', type: 'agent', agent: 'stepper', input: {} },
          { id: 'two', type: 'agent', agent: 'stepper', input: {}, depends_on: ['one'] },
        ],
      });
      expect(plan.status).toBe(201);
      const doomedApi = new Api(doomed.url, adminKey);
      const runs = await Promise.all(
        Array.from({ length: 20 }, () => doomedApi.post('/api/v1/coordination/runs', { plan_id: 'two-steps' })),
      );
      for (const run of runs) expect(run.status).toBe(201);
      doomed.child.kill('SIGKILL');
      await doomed.exited;
      const deliveries = new Map<string, number>();
      const done = async () => {
        const states = await Promise.all(runs.map((r) => api(1).get(`/api/v1/coordination/runs/${r.body.data.id}`)));
        return states.every((s) => s.body.data.status === 'completed');
      };
      await within(
        (async () => {
          for (let i = 0; !(await done()); i++) {
            const res = await api(i % 2)
              .withKey(agent.body.data.key)
              .get('/api/v1/messaging/receive?agent_id=stepper&timeout=1&max=50');
            for (const m of res.body.data?.messages ?? []) {
              const step = `${m.payload.run_id}/${m.payload.step_id}`;
              deliveries.set(step, (deliveries.get(step) ?? 0) + 1);
              await api(i % 2)
                .withKey(agent.body.data.key)
                .post('/api/v1/messaging/acknowledge', { message_id: m.message_id, output: {} });
            }
          }
        })(),
        60_000,
        'every run to complete',
      );
      expect(deliveries.size).toBe(40);
      expect([...deliveries.values()].every((n) => n === 1)).toBe(true);
    },
    90_000,
  );

  clusterIt(
    'shows killed nodes as down within 35 s',
    async () => {
      const killed = [nodes[2]!, nodes[3]!];
      await waitFor(
        async () => {
          const listed = (await api(0).get('/api/v1/cluster/nodes')).body.data as { status: string }[];
          return listed.filter((n) => n.status === 'down').length === killed.length && listed.filter((n) => n.status === 'up').length === 2;
        },
        35_000,
        500,
      );
    },
    40_000,
  );
});
