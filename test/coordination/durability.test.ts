import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { acknowledge, receiveOne, runAgent, type InboxMessage } from '../helpers/agent.js';
import { Api } from '../helpers/api.js';
import { createTestDatabase, useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { spawnServer } from '../helpers/process.js';
import { startServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const R = '/api/v1/coordination/runs';

async function agentKey(admin: Api, agentId: string): Promise<string> {
  const res = await admin.post('/api/v1/auth/keys', { agent_id: agentId, role: 'agent' });
  return res.body.data.key as string;
}

describeEachDialect('coordination durability', (dialect) => {
  const suiteDatabase = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;

  it('continues a run after SIGKILL: an ack after the restart completes the step, and due timers fire', async () => {
    const first = await spawnServer(suiteDatabase(), adminKey);
    let admin = new Api(first.url, adminKey);
    const key = await agentKey(admin, 'crash-worker');
    const plan = await admin.post('/api/v1/coordination/plans', {
      alias: 'survives-crash',
      steps: [
        { id: 'one', type: 'agent', agent: 'crash-worker', input: { n: 1 } },
        { id: 'pause', type: 'wait', seconds: 1, depends_on: ['one'] },
        { id: 'two', type: 'agent', agent: 'crash-worker', input: { after: '{{steps.one.output.v}}' }, depends_on: ['pause'] },
      ],
    });
    expect(plan.status).toBe(201);
    const run = (await admin.post(R, { plan_id: 'survives-crash' })).body.data;
    const leased = await receiveOne(admin.withKey(key), 'crash-worker');
    expect(leased.payload.step_id).toBe('one');

    first.child.kill('SIGKILL');
    await first.exited;
    const second = await spawnServer(suiteDatabase(), adminKey);
    try {
      admin = new Api(second.url, adminKey);
      const worker = admin.withKey(key);
      await acknowledge(worker, leased.message_id, { v: 'first' });
      // The wait step's timer was set by the acknowledgement; the second step follows it.
      const next = await waitFor(async () => {
        const res = await worker.get('/api/v1/messaging/receive?agent_id=crash-worker&timeout=1&visibility_timeout=2');
        return (res.body.data.messages as InboxMessage[])[0];
      }, 10_000);
      expect(next.payload).toMatchObject({ run_id: run.id, step_id: 'two', input: { after: 'first' } });

      second.child.kill('SIGKILL');
      await second.exited;
    } finally {
      second.child.kill('SIGKILL');
    }
    const third = await spawnServer(suiteDatabase(), adminKey);
    try {
      admin = new Api(third.url, adminKey);
      const worker = admin.withKey(key);
      // Leased before the crash and never acknowledged: redelivered after its visibility timeout.
      const redelivered = await waitFor(async () => {
        const res = await worker.get('/api/v1/messaging/receive?agent_id=crash-worker&timeout=1');
        return (res.body.data.messages as InboxMessage[])[0];
      }, 15_000);
      expect(redelivered.payload.step_id).toBe('two');
      await acknowledge(worker, redelivered.message_id, { v: 'second' });
      const done = await waitFor(async () => {
        const current = (await admin.get(`${R}/${run.id}`)).body.data;
        return current.status === 'completed' ? current : null;
      });
      expect(done.output).toEqual({ two: { v: 'second' } });
      expect(done.steps.map((s: { attempt: number }) => s.attempt)).toEqual([1, 1, 1]);
    } finally {
      third.child.kill('SIGTERM');
      await third.exited;
    }
  }, 90_000);
});

describeEachDialect('coordination on several nodes', (dialect) => {
  it.runIf(dialect === 'postgres')(
    'two nodes advance runs together and never execute a step twice',
    async () => {
      const database = await createTestDatabase(dialect);
      const a = await startServer(dialect, { database });
      const b = await startServer(dialect, { database, adminKey: a.adminKey });
      try {
        await a.api.post('/api/v1/coordination/plans', {
          alias: 'fan',
          steps: [
            { id: 'split', type: 'agent', agent: 'nodes-worker' },
            { id: 'left', type: 'agent', agent: 'nodes-worker', depends_on: ['split'] },
            { id: 'right', type: 'agent', agent: 'nodes-worker', depends_on: ['split'] },
            { id: 'join', type: 'agent', agent: 'nodes-worker', depends_on: ['left', 'right'] },
          ],
        });
        const key = await agentKey(a.api, 'nodes-worker');
        const seen = new Map<string, number>();
        const handle = (m: InboxMessage) => {
          const k = `${m.payload.run_id}/${m.payload.step_id}`;
          seen.set(k, (seen.get(k) ?? 0) + 1);
          return { output: { node: 'x' } };
        };
        const loops = [runAgent(a.api.withKey(key), 'nodes-worker', handle), runAgent(b.api.withKey(key), 'nodes-worker', handle)];
        const runs = await Promise.all(
          Array.from({ length: 20 }, async (_, i) => (i % 2 ? a : b).api.post(R, { plan_id: 'fan' }).then((r) => r.body.data.id as string)),
        );
        await waitFor(async () => {
          const statuses = await Promise.all(runs.map(async (id) => (await a.api.get(`${R}/${id}`)).body.data.status));
          return statuses.every((s) => s === 'completed');
        }, 30_000);
        await Promise.all(loops.map((l) => l.stop()));
        expect(seen.size).toBe(runs.length * 4);
        expect([...seen.values()].every((n) => n === 1)).toBe(true);
      } finally {
        await b.close();
        await a.close();
        await database.drop();
      }
    },
    60_000,
  );
});
