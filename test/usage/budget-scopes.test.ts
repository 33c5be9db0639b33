import { expect, it } from 'vitest';
import { receive, reportUsage, type InboxMessage } from '../helpers/agent.js';
import { Api } from '../helpers/api.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor, within } from '../helpers/wait.js';

const B = '/api/v1/budgets';
const DAY_MS = 86_400_000;
/** How often a step waiting for an agent looks again (steps/agent.ts). */
const RECHECK_MS = 5_000;

/** Budgets that pause a capability, a plan, or every agent (agent budgets: budgets.test.ts). */
describeEachDialect('budgets over capabilities, plans and everything', (dialect) => {
  const clock = new FakeClock(Date.parse('2026-03-10T12:00:00Z'));
  const server = useServer(dialect, { clock });
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  async function create(body: Record<string, unknown>) {
    const res = await server.api.post(B, body);
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string };
  }
  const state = async (id: string) => (await server.api.get(`${B}/${id}`)).body.data.state as string;

  /** An agent offering `capabilities`, heard from. */
  async function worker(name: string, capabilities: string[]) {
    const agentId = unique(name);
    const agent = await server.agent(agentId);
    for (const capability of capabilities) {
      const res = await agent.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability });
      expect(res.status, res.text).toBe(201);
    }
    await agent.post('/api/v1/discovery/heartbeat', { agent_id: agentId });
    return { agentId, agent };
  }

  async function plan(capability: string) {
    const res = await server.api.post('/api/v1/coordination/plans', {
      alias: unique('plan'),
      steps: [{ id: 'work', type: 'agent', capability, input: {}, timeout_seconds: 600 }],
    });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  }

  async function start(planId: string) {
    const res = await server.api.post('/api/v1/coordination/runs', { plan_id: planId, input: {} });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  }
  const run = async (runId: string) => (await server.api.get(`/api/v1/coordination/runs/${runId}`)).body.data;
  const blocked = { status: 'waiting', blocked_by: 'budget', steps: [{ status: 'waiting', blocked_by: 'budget' }] };

  /** Usage of a run's step (its plan and capability count it), or of the agent alone. */
  const spend = (agent: Api, agentId: string, cost: number, runId?: string) =>
    reportUsage(agent, agentId, cost, runId === undefined ? undefined : { run_id: runId, step_id: 'work' });

  const found = async (capability: string, extra = '') =>
    ((await server.api.get(`/api/v1/discovery/agents?capability=${capability}${extra}`)).body.data.agents as { agent_id: string }[]).map(
      (a) => a.agent_id,
    );

  async function send(agentId: string) {
    const res = await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'work', payload: {} });
    expect(res.status, res.text).toBe(201);
    return res.body.data.message_id as string;
  }

  /**
   * Receives until the agent has got `count` messages. A waiting step looks again when its
   * recheck is due on the fake clock, which the run timer notices when it wakes (within seconds).
   */
  async function collect(agent: Api, agentId: string, count: number): Promise<InboxMessage[]> {
    clock.advance(RECHECK_MS);
    const got: InboxMessage[] = [];
    await waitFor(
      async () => {
        got.push(...(await receive(agent, agentId, 0)));
        return got.length >= count;
      },
      20_000,
      100,
    );
    return got;
  }

  it('a capability budget hides the capability from lookups and holds its steps, not its agents; the resume call resumes it', async () => {
    const capability = unique('cap');
    const other = unique('other');
    const { agentId, agent } = await worker('cap-agent', [capability, other]);
    const b = await create({ capability, period: 'day', limits: { cost_usd: 1 }, action: 'pause' });
    const planId = await plan(capability);
    const first = await start(planId);
    const [step] = await collect(agent, agentId, 1);
    expect(step!.payload).toMatchObject({ run_id: first });
    await spend(agent, agentId, 2, first);
    expect(await state(b.id)).toBe('paused');

    expect(await found(capability)).toEqual([]);
    expect(await found(capability, '&include_paused=true')).toEqual([agentId]);
    expect(await found(capability, '&strategy=round_robin')).toEqual([]);
    const flagged = (await server.api.get(`/api/v1/discovery/agents?capability=${capability}&include_paused=true`)).body.data.agents;
    expect(flagged).toMatchObject([{ agent_id: agentId, paused: true }]);
    // The agent itself is not paused: its other capability is found, its inbox delivers.
    expect(await found(other)).toEqual([agentId]);
    const direct = await send(agentId);
    expect((await receive(agent, agentId, 0)).map((m) => m.message_id)).toEqual([direct]);

    const second = await start(planId);
    expect(await run(second)).toMatchObject(blocked);
    expect(await receive(agent, agentId, 0)).toEqual([]);

    const resumed = await server.api.post(`${B}/${b.id}/resume`);
    expect(resumed.status, resumed.text).toBe(200);
    expect(await found(capability)).toEqual([agentId]);
    const [held] = await collect(agent, agentId, 1);
    expect(held!.payload).toMatchObject({ run_id: second, step_id: 'work' });
    expect(await run(second)).toMatchObject({ status: 'running', blocked_by: null, steps: [{ status: 'running', blocked_by: null }] });
  });

  it("a plan budget holds its runs' steps, which start but wait, not other plans' nor its agents; a raised limit resumes it", async () => {
    const capability = unique('cap');
    const { agentId, agent } = await worker('plan-agent', [capability]);
    const planId = await plan(capability);
    const otherPlan = await plan(capability);
    const b = await create({ plan_id: planId, period: 'day', limits: { cost_usd: 1 }, action: 'pause' });
    const first = await start(planId);
    await collect(agent, agentId, 1);
    await spend(agent, agentId, 1.5, first);
    expect(await state(b.id)).toBe('paused');

    const second = await start(planId);
    expect(await run(second)).toMatchObject(blocked);
    // Lookups and other plans' steps go on.
    expect(await found(capability)).toEqual([agentId]);
    const elsewhere = await start(otherPlan);
    const [other] = await collect(agent, agentId, 1);
    expect(other!.payload).toMatchObject({ run_id: elsewhere });
    expect(await receive(agent, agentId, 0)).toEqual([]);

    const raised = await server.api.patch(`${B}/${b.id}`, { limits: { cost_usd: 10 } });
    expect(raised.status, raised.text).toBe(200);
    expect(raised.body.data.state).toBe('ok');
    const [held] = await collect(agent, agentId, 1);
    expect(held!.payload).toMatchObject({ run_id: second, step_id: 'work' });
  });

  it('lists only the budgets pausing their scope with state=paused, until a resume or the period ends', async () => {
    const capability = unique('cap');
    const { agentId, agent } = await worker('listed-agent', [capability]);
    const planId = await plan(capability);
    const pausing = await create({ plan_id: planId, period: 'day', limits: { cost_usd: 1 }, action: 'pause' });
    const warning = await create({ plan_id: planId, period: 'day', limits: { cost_usd: 1 }, action: 'warn' });
    const runId = await start(planId);
    await collect(agent, agentId, 1);
    const pausedIds = async () => {
      const res = await server.api.get(`${B}?state=paused&limit=100`);
      expect(res.status, res.text).toBe(200);
      return (res.body.data as { id: string; state: string; scope: unknown }[]).filter((b) => [pausing.id, warning.id].includes(b.id));
    };
    expect(await pausedIds()).toEqual([]);
    await spend(agent, agentId, 2, runId);
    expect(await state(warning.id)).toBe('exceeded');
    expect(await pausedIds()).toMatchObject([{ id: pausing.id, state: 'paused', scope: { kind: 'plan', value: planId } }]);
    expect((await server.api.get(`${B}?state=exceeded`)).status).toBe(400);

    expect((await server.api.post(`${B}/${pausing.id}/resume`)).status).toBe(200);
    expect(await pausedIds()).toEqual([]);
    // Paused again in a new period, then that period ends: its pause with it.
    clock.advance(DAY_MS);
    const next = await start(planId);
    await collect(agent, agentId, 1);
    await spend(agent, agentId, 2, next);
    expect(await pausedIds()).toMatchObject([{ id: pausing.id }]);
    clock.advance(DAY_MS);
    expect(await pausedIds()).toEqual([]);
  });

  it('a global budget pauses every agent: inboxes hold, lookups skip; a new period resumes them and delivers what was held', async () => {
    const capability = unique('cap');
    const { agentId, agent } = await worker('global-agent', [capability]);
    const bystander = await worker('bystander', [unique('cap')]);
    const b = await create({ period: 'day', limits: { cost_usd: 1 }, action: 'pause' });
    try {
      await spend(bystander.agent, bystander.agentId, 1);
      expect(await state(b.id)).toBe('paused');

      const direct = await send(agentId);
      const other = await send(bystander.agentId);
      expect(await receive(agent, agentId, 0)).toEqual([]);
      expect(await receive(bystander.agent, bystander.agentId, 0)).toEqual([]);
      expect(await found(capability)).toEqual([]);
      expect(await found(capability, '&include_paused=true')).toEqual([agentId]);

      clock.advance(DAY_MS);
      expect(await state(b.id)).toBe('ok');
      // A day later on the fake clock, the agent is heard from again to be healthy.
      await agent.post('/api/v1/discovery/heartbeat', { agent_id: agentId });
      expect(await found(capability)).toEqual([agentId]);
      expect((await receive(bystander.agent, bystander.agentId, 5)).map((m) => m.message_id)).toEqual([other]);
      expect((await receive(agent, agentId, 5)).map((m) => m.message_id)).toEqual([direct]);
    } finally {
      await server.api.delete(`${B}/${b.id}`);
    }
  });

  it('a global pause holds steps and long polls; the resume call wakes the poll and the step goes on', async () => {
    const capability = unique('cap');
    const { agentId, agent } = await worker('global-poll', [capability]);
    const planId = await plan(capability);
    const b = await create({ period: 'day', limits: { tokens: 1 }, action: 'pause' });
    try {
      await spend(agent, agentId, 0);
      expect(await state(b.id)).toBe('paused');
      const runId = await start(planId);
      expect(await run(runId)).toMatchObject(blocked);
      const messageId = await send(agentId);
      const arrived = server.requestArrival('GET', '/api/v1/messaging/receive');
      // Its deadline is far off: only the resume's wake-up ends its wait within `within`'s.
      const waiting = within(receive(agent, agentId, 30), 20_000, 'message for a resumed long poll');
      await arrived;
      expect((await server.api.post(`${B}/${b.id}/resume`)).status).toBe(200);
      expect((await waiting).map((m) => m.message_id)).toEqual([messageId]);
      const [step] = await collect(agent, agentId, 1);
      expect(step!.payload).toMatchObject({ run_id: runId, step_id: 'work' });
    } finally {
      await server.api.delete(`${B}/${b.id}`);
    }
  });

  // Nodes share a database on PostgreSQL only: one SQLite data directory serves one process.
  it.skipIf(dialect !== 'postgres')('a global pause made on one node holds inboxes on another, and its resume wakes them', async () => {
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey, clock });
    try {
      const capability = unique('cap');
      const { agentId, agent } = await worker('global-clustered', [capability]);
      const there = new Api(second.url, agent.key);
      const lookup = async () =>
        ((await second.api.get(`/api/v1/discovery/agents?capability=${capability}`)).body.data.agents as { agent_id: string }[]).map(
          (a) => a.agent_id,
        );
      // The second node has read (and keeps) what is paused: nothing yet.
      expect(await lookup()).toEqual([agentId]);
      const b = await create({ period: 'day', limits: { cost_usd: 1 }, action: 'pause' });
      try {
        await spend(agent, agentId, 2);
        await waitFor(async () => (await lookup()).length === 0);
        const messageId = await send(agentId);
        expect(await receive(there, agentId, 0)).toEqual([]);
        const arrived = second.requestArrival('GET', '/api/v1/messaging/receive');
        const waiting = within(receive(there, agentId, 30), 20_000, 'message for a resumed long poll on the other node');
        await arrived;
        expect((await server.api.post(`${B}/${b.id}/resume`)).status).toBe(200);
        expect((await waiting).map((m) => m.message_id)).toEqual([messageId]);
      } finally {
        await server.api.delete(`${B}/${b.id}`);
      }
    } finally {
      await second.close();
    }
  });
});
