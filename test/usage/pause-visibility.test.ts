import { beforeAll, expect, it } from 'vitest';
import { receiveOne, reportUsage } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const B = '/api/v1/budgets';
const PLANS = '/api/v1/coordination/plans';
const CAPABILITIES = '/api/v1/discovery/capabilities';

interface Pause {
  budget_id: string;
  until: string | null;
}
interface ScopePause extends Pause {
  scope: { kind: string; value: string | null };
}

/** What budgets pause, as anyone who reads plans and agents sees it: not only budgets:admin. */
describeEachDialect('budget pauses readable without budgets:admin', (dialect) => {
  const server = useServer(dialect);
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;
  let viewer: Api;

  async function budget(body: Record<string, unknown>) {
    const res = await server.api.post(B, { period: 'day', limits: { cost_usd: 1 }, action: 'pause', ...body });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; period_end: string | null };
  }

  async function read<T>(path: string): Promise<T> {
    const res = await viewer.get(path);
    expect(res.status, res.text).toBe(200);
    return res.body.data as T;
  }
  const pauses = () => read<ScopePause[]>(`${B}/pauses`);

  /** An agent offering a capability, heard from, and two plans with one step for it. */
  async function setUp() {
    const capability = unique('cap');
    const agentId = unique('worker');
    const agent = await server.agent(agentId);
    expect((await agent.post(CAPABILITIES, { agent_id: agentId, capability })).status).toBe(201);
    await agent.post('/api/v1/discovery/heartbeat', { agent_id: agentId });
    const plan = async () => {
      const res = await server.api.post(PLANS, {
        alias: unique('plan'),
        steps: [{ id: 'work', type: 'agent', capability, input: {}, timeout_seconds: 600 }],
      });
      expect(res.status, res.text).toBe(201);
      return res.body.data.id as string;
    };
    return { capability, agentId, agent, planId: await plan(), otherPlanId: await plan() };
  }

  beforeAll(async () => {
    const key = await server.api.post('/api/v1/auth/keys', { name: unique('viewer'), role: 'viewer' });
    expect(key.status, key.text).toBe(201);
    viewer = server.api.withKey(key.body.data.key);
    // The viewer reads plans and agents, not budgets.
    expect((await viewer.get(B)).status).toBe(403);
  });

  it('sees a paused plan on the plan and the plan list, a paused capability on the capabilities, and both in the pauses; none after the resume', async () => {
    const { capability, agentId, agent, planId, otherPlanId } = await setUp();
    const planBudget = await budget({ plan_id: planId });
    const capabilityBudget = await budget({ capability });
    const [capabilityRow] = await read<{ id: string; paused: Pause | null }[]>(`${CAPABILITIES}?capability=${capability}`);
    expect(capabilityRow!.paused).toBeNull();
    expect((await read<{ paused: Pause | null }>(`${PLANS}/${planId}`)).paused).toBeNull();

    // One step's usage counts against its plan's and its capability's budgets: both pause.
    const run = await server.api.post('/api/v1/coordination/runs', { plan_id: planId, input: {} });
    expect(run.status, run.text).toBe(201);
    await receiveOne(agent, agentId);
    await reportUsage(agent, agentId, 2, { run_id: run.body.data.id as string, step_id: 'work' });

    const planPause = { budget_id: planBudget.id, until: planBudget.period_end };
    const capabilityPause = { budget_id: capabilityBudget.id, until: capabilityBudget.period_end };
    expect((await read<{ paused: Pause | null }>(`${PLANS}/${planId}`)).paused).toEqual(planPause);
    const listed = await read<{ id: string; paused: Pause | null }[]>(`${PLANS}?limit=500`);
    expect(listed.find((plan) => plan.id === planId)?.paused).toEqual(planPause);
    expect(listed.find((plan) => plan.id === otherPlanId)?.paused).toBeNull();
    expect((await read<{ paused: Pause | null }[]>(`${CAPABILITIES}?capability=${capability}`)).map((c) => c.paused)).toEqual([
      capabilityPause,
    ]);
    expect((await read<{ paused: Pause | null }>(`${CAPABILITIES}/${capabilityRow!.id}`)).paused).toEqual(capabilityPause);
    expect(await pauses()).toEqual(
      expect.arrayContaining([
        { scope: { kind: 'plan', value: planId }, ...planPause },
        { scope: { kind: 'capability', value: capability }, ...capabilityPause },
      ]),
    );

    for (const id of [planBudget.id, capabilityBudget.id]) expect((await server.api.post(`${B}/${id}/resume`)).status).toBe(200);
    expect((await read<{ paused: Pause | null }>(`${PLANS}/${planId}`)).paused).toBeNull();
    expect((await read<{ paused: Pause | null }>(`${CAPABILITIES}/${capabilityRow!.id}`)).paused).toBeNull();
    expect((await pauses()).filter((pause) => [planId, capability].includes(pause.scope.value ?? ''))).toEqual([]);
  });

  it('sees the global pause in the pauses (not as every plan paused), without an end for a total budget, and no longer once resumed', async () => {
    const { agentId, agent, planId } = await setUp();
    const global = await budget({ period: 'total', limits: { tokens: 1 } });
    expect(global.period_end).toBeNull();
    try {
      await reportUsage(agent, agentId, 0);
      expect(await pauses()).toContainEqual({ scope: { kind: 'global', value: null }, budget_id: global.id, until: global.period_end });
      // A plan's pause is its own budget's: every agent paused is the pauses' global entry.
      expect((await read<{ paused: Pause | null }>(`${PLANS}/${planId}`)).paused).toBeNull();

      expect((await server.api.post(`${B}/${global.id}/resume`)).status).toBe(200);
      expect((await pauses()).filter((pause) => pause.scope.kind === 'global')).toEqual([]);
    } finally {
      await server.api.delete(`${B}/${global.id}`);
    }
  });
});
