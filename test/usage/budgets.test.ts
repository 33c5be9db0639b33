import { expect, it } from 'vitest';
import { receive } from '../helpers/agent.js';
import { Api } from '../helpers/api.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const B = '/api/v1/budgets';
const U = '/api/v1/usage';
const DAY_MS = 86_400_000;

describeEachDialect('budgets', (dialect) => {
  const clock = new FakeClock(Date.parse('2026-03-10T12:00:00Z'));
  // Long polls end on this clock: the polls that must find nothing ask for no wait.
  const server = useServer(dialect, { clock });
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  async function create(body: Record<string, unknown>) {
    const res = await server.api.post(B, body);
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string };
  }
  const budget = async (id: string) => (await server.api.get(`${B}/${id}`)).body.data;

  async function spend(agent: Api, agentId: string, cost: number) {
    const res = await agent.post(U, { agent_id: agentId, model: 'm', input_tokens: 10, output_tokens: 10, cost_usd: cost });
    expect(res.status, res.text).toBe(201);
  }

  async function events(type: string, subject: string) {
    const res = await server.api.get(`/api/v1/events?type=${type}&subject=${subject}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data as { type: string; data: any }[];
  }

  /** An agent with a capability, heard from, and one message waiting in its inbox. */
  async function pausable(name: string) {
    const agentId = unique(name);
    const agent = await server.agent(agentId);
    const capability = unique('cap');
    await agent.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability });
    await agent.post('/api/v1/discovery/heartbeat', { agent_id: agentId });
    const b = await create({ agent_id: agentId, period: 'day', limits: { cost_usd: 1 }, warn_at: 0.5, action: 'pause' });
    return { agentId, agent, capability, budget: b };
  }

  const found = async (capability: string, extra = '') =>
    ((await server.api.get(`/api/v1/discovery/agents?capability=${capability}${extra}`)).body.data.agents as { agent_id: string }[]).map(
      (a) => a.agent_id,
    );

  /** Sends one message; the agent receives it only when it is not paused. */
  async function send(agentId: string) {
    const res = await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'work', payload: {} });
    expect(res.status, res.text).toBe(201);
    return res.body.data.message_id as string;
  }

  it('is managed by holders of budgets:admin, validated', async () => {
    const agentId = unique('crud');
    const agent = await server.agent(agentId);
    expect((await agent.post(B, { period: 'day', limits: { cost_usd: 1 }, action: 'warn' })).status).toBe(403);
    expect((await agent.get(B)).status).toBe(403);
    for (const bad of [
      { period: 'day', limits: {}, action: 'warn' },
      { period: 'hour', limits: { cost_usd: 1 }, action: 'warn' },
      { period: 'day', limits: { cost_usd: -1 }, action: 'warn' },
      { period: 'day', limits: { cost_usd: 1 }, action: 'warn', warn_at: 1.5 },
      { period: 'day', limits: { cost_usd: 1 }, action: 'warn', agent_id: agentId, plan_id: 'p' },
      { period: 'day', limits: { cost_usd: 1 }, action: 'warn', time_zone: 'Mars/Olympus' },
    ]) {
      const res = await server.api.post(B, bad);
      expect(res.status, `${JSON.stringify(bad)} ${res.text}`).toBe(400);
    }
    const made = await create({ name: 'team', period: 'month', time_zone: 'Europe/Paris', limits: { tokens: 1000 }, action: 'warn' });
    expect(await budget(made.id)).toMatchObject({
      name: 'team',
      scope: { kind: 'global', value: null },
      period_start: '2026-02-28T23:00:00.000Z',
      period_end: '2026-03-31T22:00:00.000Z',
      spent: { cost_usd: 0, tokens: 0 },
      state: 'ok',
    });
    const changed = await server.api.patch(`${B}/${made.id}`, { limits: { tokens: 2000 }, warn_at: 0.8 });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data).toMatchObject({ limits: { tokens: 2000, cost_usd: null }, warn_at: 0.8 });
    expect((await server.api.get(B)).body.data.map((b: { id: string }) => b.id)).toContain(made.id);
    expect((await server.api.delete(`${B}/${made.id}`)).status).toBe(200);
    expect((await server.api.get(`${B}/${made.id}`)).status).toBe(404);
  });

  it('warns, then pauses: the inbox holds its messages, lookups skip the agent; the resume call resumes it', async () => {
    const { agentId, agent, capability, budget: b } = await pausable('paused');
    await spend(agent, agentId, 0.6);
    expect((await budget(b.id)).state).toBe('warning');
    expect(await events('budget.warning', b.id)).toHaveLength(1);
    await spend(agent, agentId, 0.5);
    expect(await budget(b.id)).toMatchObject({ state: 'paused', spent: { cost_usd: 1.1, tokens: 40 } });
    const [exceeded] = await events('budget.exceeded', b.id);
    expect(exceeded!.data).toMatchObject({ paused: true });
    expect(await events('budget.warning', b.id)).toHaveLength(1);

    const messageId = await send(agentId);
    expect(await receive(agent, agentId, 0)).toEqual([]);
    const pending = (await server.api.get(`/api/v1/messaging/inboxes/${agentId}/messages?state=pending`)).body.data;
    expect(pending.map((m: { message_id: string }) => m.message_id)).toEqual([messageId]);
    expect(await found(capability)).toEqual([]);
    expect(await found(capability, '&include_paused=true')).toEqual([agentId]);
    expect(await found(capability, '&strategy=round_robin')).toEqual([]);
    // Who may look agents up (the agent's own key here, no budgets:admin) sees that a budget paused it.
    const flagged = async (extra = '') =>
      ((await agent.get(`/api/v1/discovery/agents?capability=${capability}${extra}`)).body.data.agents as { paused: boolean }[]).map(
        (a) => a.paused,
      );
    expect(await flagged('&include_paused=true')).toEqual([true]);
    expect(await flagged('&include_paused=true&strategy=round_robin')).toEqual([true]);

    // A long poll that waits while the agent is paused gets the message once it resumes.
    const waiting = receive(agent, agentId, 10);
    const resumed = await server.api.post(`${B}/${b.id}/resume`);
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body.data.state).toBe('exceeded');
    expect((await waiting).map((m) => m.message_id)).toEqual([messageId]);
    expect(await found(capability)).toEqual([agentId]);
    expect(await events('budget.resumed', b.id)).toHaveLength(1);
    expect(await flagged()).toEqual([false]);
    // Exceeded already this period: more spending does not pause it again.
    await spend(agent, agentId, 1);
    expect((await budget(b.id)).state).toBe('exceeded');
  });

  it('a capability step whose agents a budget paused waits, blocked_by budget, and goes on once it resumes', async () => {
    const { agentId, agent, capability, budget: b } = await pausable('step');
    await spend(agent, agentId, 1.5);
    expect((await budget(b.id)).state).toBe('paused');
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: unique('paused-plan'),
      steps: [{ id: 'work', type: 'agent', capability, input: {}, timeout_seconds: 600 }],
    });
    expect(plan.status, plan.text).toBe(201);
    const started = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: {} });
    expect(started.status, started.text).toBe(201);
    const run = async () => (await server.api.get(`/api/v1/coordination/runs/${started.body.data.id}`)).body.data;
    expect(await run()).toMatchObject({ status: 'waiting', blocked_by: 'budget', steps: [{ status: 'waiting', blocked_by: 'budget' }] });
    const metrics = (await server.api.get('/metrics')).text;
    expect(metrics).toMatch(/switchboard_runs_blocked\{blocked_by="budget"\} [1-9]/);

    expect((await server.api.post(`${B}/${b.id}/resume`)).status).toBe(200);
    clock.advance(5_000);
    const [message] = await waitFor(async () => {
      const got = await receive(agent, agentId, 0);
      return got.length > 0 ? got : undefined;
    }, 10_000);
    expect(message!.payload).toMatchObject({ run_id: started.body.data.id, step_id: 'work' });
    expect(await run()).toMatchObject({ status: 'running', blocked_by: null, steps: [{ status: 'running', blocked_by: null }] });
  });

  it('a limit raised above what the period spent resumes the agent', async () => {
    const { agentId, agent, budget: b } = await pausable('raised');
    await spend(agent, agentId, 2);
    expect((await budget(b.id)).state).toBe('paused');
    const messageId = await send(agentId);
    expect(await receive(agent, agentId, 0)).toEqual([]);
    const raised = await server.api.patch(`${B}/${b.id}`, { limits: { cost_usd: 10 } });
    expect(raised.status, raised.text).toBe(200);
    expect(raised.body.data).toMatchObject({ state: 'ok', spent: { cost_usd: 2 } });
    expect((await receive(agent, agentId, 5)).map((m) => m.message_id)).toEqual([messageId]);
  });

  it('a new period resumes the agent and counts from zero', async () => {
    const { agentId, agent, budget: b } = await pausable('rollover');
    await spend(agent, agentId, 1);
    expect((await budget(b.id)).state).toBe('paused');
    const messageId = await send(agentId);
    expect(await receive(agent, agentId, 0)).toEqual([]);
    clock.advance(DAY_MS);
    expect(await budget(b.id)).toMatchObject({ state: 'ok', spent: { cost_usd: 0, tokens: 0 } });
    expect((await receive(agent, agentId, 5)).map((m) => m.message_id)).toEqual([messageId]);
    await spend(agent, agentId, 0.25);
    expect((await budget(b.id)).spent).toEqual({ cost_usd: 0.25, tokens: 20 });
  });

  // Nodes share a database on PostgreSQL only: one SQLite data directory serves one process.
  it.skipIf(dialect !== 'postgres')(
    'a pause made on one node holds the inbox for a receiver on another, and its resume wakes it',
    async () => {
      const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey, clock });
      try {
        const { agentId, agent, capability, budget: b } = await pausable('clustered');
        const there = new Api(second.url, agent.key);
        const lookup = async () =>
          ((await second.api.get(`/api/v1/discovery/agents?capability=${capability}`)).body.data.agents as { agent_id: string }[]).map(
            (a) => a.agent_id,
          );
        // The second node has read (and keeps) who is paused: nobody yet.
        expect(await receive(there, agentId, 0)).toEqual([]);
        expect(await lookup()).toEqual([agentId]);
        await spend(agent, agentId, 5);
        // The pause made on the first node reaches the second's lookups and receives.
        await waitFor(async () => (await lookup()).length === 0);
        const messageId = await send(agentId);
        expect(await receive(there, agentId, 0)).toEqual([]);
        const arrived = second.requestArrival('GET', '/api/v1/messaging/receive');
        const waiting = receive(there, agentId, 10);
        // Resumed once the receive waits: only the resume's notice can end its wait early.
        await arrived;
        await new Promise((resolve) => setTimeout(resolve, 100));
        const resumedAt = Date.now();
        expect((await server.api.post(`${B}/${b.id}/resume`)).status).toBe(200);
        expect((await waiting).map((m) => m.message_id)).toEqual([messageId]);
        expect(Date.now() - resumedAt).toBeLessThan(5_000);
      } finally {
        await second.close();
      }
    },
  );

  it.skipIf(dialect !== 'postgres')('a budget made on one node counts the usage recorded on another, which pauses the agent', async () => {
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey, clock });
    try {
      const agentId = unique('scoped');
      const agent = await server.agent(agentId);
      const there = new Api(second.url, agent.key);
      // The second node has read (and keeps) which scopes have budgets: none of this agent's yet.
      await spend(there, agentId, 0.25);
      const b = await create({ agent_id: agentId, period: 'day', limits: { cost_usd: 1 }, action: 'pause' });
      // The budget made on the first node reaches the second's records.
      await waitFor(async () => {
        await spend(there, agentId, 0.25);
        return (await budget(b.id)).spent.cost_usd > 0;
      });
      await spend(there, agentId, 1);
      expect((await budget(b.id)).state).toBe('paused');
      await send(agentId);
      expect(await receive(there, agentId, 0)).toEqual([]);
      // A deleted budget no longer counts there: its agent's records go on without it.
      expect((await server.api.delete(`${B}/${b.id}`)).status).toBe(200);
      await waitFor(async () => (await receive(there, agentId, 0)).length > 0);
      await spend(there, agentId, 0.25);
    } finally {
      await second.close();
    }
  });

  it('counts usage against capability, plan and global budgets, which warn', async () => {
    const agentId = unique('counted');
    const agent = await server.agent(agentId);
    const global = await create({ period: 'total', limits: { tokens: 1_000_000_000 }, action: 'warn' });
    const before = (await budget(global.id)).spent.tokens;
    await spend(agent, agentId, 0);
    expect((await budget(global.id)).spent.tokens).toBe(before + 20);
    expect((await budget(global.id)).period_end).toBeNull();
    await server.api.delete(`${B}/${global.id}`);
  });
});
