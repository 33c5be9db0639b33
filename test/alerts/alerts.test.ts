import { afterEach, expect, it } from 'vitest';
import { acknowledge, receiveOne, reject } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const R = '/api/v1/alerts/rules';
const A = '/api/v1/alerts';
const M = '/api/v1/messaging';

interface Alert {
  id: string;
  rule_id: string;
  state: 'firing' | 'resolved';
  value: number;
  detail: string | null;
  acknowledged_by: string | null;
}

describeEachDialect('alerts', (dialect) => {
  // Conditions are measured on this clock; the evaluator ticks every 20 ms of real time.
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock, env: { SWITCHBOARD_ALERT_INTERVAL_MS: '20', SWITCHBOARD_HEALTH_TTL_S: '30' } });
  let triages = 0;

  afterEach(async () => {
    for (const rule of (await server.api.get(`${R}?limit=500`)).body.data) await server.api.delete(`${R}/${rule.id}`);
  });

  /** An agent channel: the notifications land in a triage agent's inbox, where the test counts them. */
  async function channel() {
    const agentId = `triage-${dialect}-${++triages}`;
    const res = await server.api.post('/api/v1/notifications/channels', { type: 'agent', name: agentId, config: { agent_id: agentId } });
    expect(res.status, res.text).toBe(201);
    return { id: res.body.data.id as string, agentId };
  }

  /** The notifications' titles in the triage agent's inbox, oldest first. */
  async function told(agentId: string): Promise<string[]> {
    const res = await server.api.get(`${M}/inboxes/${agentId}/messages?limit=500`);
    expect(res.status, res.text).toBe(200);
    return res.body.data.map((m: { payload: { title: string } }) => m.payload.title);
  }

  async function createRule(body: Record<string, unknown>) {
    const res = await server.api.post(R, { name: 'a rule', ...body });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; name: string };
  }

  function alertOf(ruleId: string, state: Alert['state']): Promise<Alert> {
    return waitFor(async () => (await server.api.get(`${A}?rule_id=${ruleId}&state=${state}`)).body.data[0] as Alert | undefined, 10_000);
  }

  /** Waits until the evaluator has run `count` more passes (it reports them on its node). */
  async function passes(count: number): Promise<void> {
    const runs = async () => {
      const nodes = (await server.api.get('/api/v1/cluster/nodes')).body.data as { workers?: { name: string; runs: number }[] }[];
      return nodes.flatMap((n) => n.workers ?? []).find((w) => w.name === 'alert-evaluator')!.runs;
    };
    const start = await runs();
    await waitFor(async () => (await runs()) >= start + count, 10_000);
  }

  /**
   * Creates a rule on `condition`, makes it hold, sees it fire with one notification that no
   * later pass repeats, releases it, and sees it resolve with one more, both logged as events.
   */
  async function cycle(condition: Record<string, unknown>, hold: () => Promise<void>, release: () => Promise<void>): Promise<Alert> {
    const to = await channel();
    const rule = await createRule({ name: `${condition.type} rule`, condition, channels: [to.id], severity: 'critical' });
    await passes(2);
    expect(await told(to.agentId)).toEqual([]);
    await hold();
    const fired = await alertOf(rule.id, 'firing');
    await waitFor(async () => (await told(to.agentId)).length === 1, 10_000);
    await passes(3);
    expect(await told(to.agentId)).toEqual([`Firing: ${rule.name}`]);
    await release();
    const resolved = await alertOf(rule.id, 'resolved');
    expect(resolved.id).toBe(fired.id);
    await waitFor(async () => (await told(to.agentId)).length === 2, 10_000);
    await passes(3);
    expect(await told(to.agentId)).toEqual([`Firing: ${rule.name}`, `Resolved: ${rule.name}`]);
    const events = (await server.api.get(`/api/v1/events?subject=${fired.id}`)).body.data;
    expect(events.map((e: { type: string; data: { rule_id: string } }) => [e.type, e.data.rule_id])).toEqual([
      ['alert.fired', rule.id],
      ['alert.resolved', rule.id],
    ]);
    return fired;
  }

  it('event_count: fires on matching events in the window and resolves as they leave it; the gauge counts it while firing', async () => {
    const fired = await cycle(
      { type: 'event_count', event_type: 'task.*', window_s: 60, threshold: 2 },
      async () => {
        for (const title of ['one', 'two']) expect((await server.api.post('/core/api/v1/tasks', { title })).status).toBe(201);
        const metrics = await waitFor(async () => {
          const text = (await server.api.get('/metrics')).text;
          return /switchboard_alerts_firing\{rule="alr_[^"]+",severity="critical"\} 1/.test(text) && text;
        }, 10_000);
        expect(metrics).toContain('switchboard_alerts_firing');
      },
      async () => clock.advance(61_000),
    );
    expect(fired.value).toBe(2);
  });

  it('inbox_depth and inbox_age: per agent', async () => {
    const worker = await server.agent('alert-busy');
    const sent: string[] = [];
    const send = async () => {
      const res = await worker.post(`${M}/send`, { destination: 'alert-busy', event_name: 'job' });
      expect(res.status, res.text).toBe(201);
      sent.push(res.body.data.message_id);
    };
    const drain = async () => {
      for (let i = 0; i < sent.length; i++) await acknowledge(worker, (await receiveOne(worker, 'alert-busy')).message_id);
      sent.length = 0;
    };
    const deep = await cycle(
      { type: 'inbox_depth', agent_id: 'alert-busy', threshold: 2 },
      async () => (await send(), await send()),
      drain,
    );
    expect(deep).toMatchObject({ value: 2, detail: 'alert-busy' });
    const old = await cycle(
      { type: 'inbox_age', agent_id: 'alert-busy', older_than_s: 30 },
      async () => (await send(), clock.advance(31_000)),
      drain,
    );
    expect(old.value).toBeGreaterThanOrEqual(31);
  });

  it('dead_letters: fires on a dead letter and resolves when it is redriven', async () => {
    const worker = await server.agent('alert-dl');
    let dead = '';
    await cycle(
      { type: 'dead_letters', agent_id: 'alert-dl', threshold: 1 },
      async () => {
        await worker.post(`${M}/send`, { destination: 'alert-dl', event_name: 'bad', max_deliveries: 1 });
        dead = (await receiveOne(worker, 'alert-dl')).message_id;
        await reject(worker, dead, 'no', false);
      },
      async () => {
        expect((await worker.post(`${M}/dead-letters/${dead}/redrive`)).status).toBe(201);
        await acknowledge(worker, (await receiveOne(worker, 'alert-dl')).message_id);
      },
    );
  });

  it('agent_unhealthy: an agent of a capability without heartbeats for for_s, until it beats again', async () => {
    const beat = async () => expect((await server.api.post('/api/v1/discovery/heartbeat', { agent_id: 'alert-sick' })).status).toBe(200);
    expect((await server.api.post('/api/v1/discovery/capabilities', { agent_id: 'alert-sick', capability: 'alerts.probe' })).status).toBe(
      201,
    );
    await beat();
    const fired = await cycle({ type: 'agent_unhealthy', capability: 'alerts.probe', for_s: 10 }, async () => clock.advance(41_000), beat);
    expect(fired).toMatchObject({ value: 1, detail: 'alert-sick' });
    await server.api.delete('/api/v1/discovery/agents/alert-sick');
  });

  it('approval_waiting: a human step older than older_than_s, until it is decided', async () => {
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `alert-gate-${dialect}`,
      steps: [{ id: 'gate', type: 'human_approval', prompt: 'Ship?' }],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: {} })).body.data;
    const fired = await cycle(
      { type: 'approval_waiting', plan_id: plan.body.data.id, older_than_s: 60 },
      async () => clock.advance(61_000),
      async () => {
        const res = await server.api.post(`/api/v1/coordination/runs/${run.id}/steps/gate/approve`, { approved: true });
        expect(res.status, res.text).toBe(200);
      },
    );
    expect(fired).toMatchObject({ value: 1, detail: `${run.id}/gate` });
  });

  it('routine_failures: consecutive failed executions, until one succeeds', async () => {
    const worker = await server.agent('alert-routine');
    const routine = (
      await server.api.post('/core/api/v1/routines', { name: 'flaky', trigger_type: 'webhook', target_agent: 'alert-routine' })
    ).body.data;
    const run = async (ok: boolean) => {
      expect((await server.api.post(`/core/api/v1/routines/${routine.id}/trigger`)).status).toBe(202);
      const message = await receiveOne(worker, 'alert-routine');
      if (ok) await acknowledge(worker, message.message_id, { ok });
      else await reject(worker, message.message_id, 'cannot', false);
    };
    const fired = await cycle(
      { type: 'routine_failures', routine_id: routine.id, threshold: 2 },
      async () => (await run(false), await run(false)),
      () => run(true),
    );
    expect(fired).toMatchObject({ value: 2, detail: routine.id });
  });

  it('budget: consumption at a fraction of the limit in the current period, until the limit is raised', async () => {
    const agentId = `alert-budget-${dialect}`;
    const budget = await server.api.post('/api/v1/budgets', {
      name: 'spend',
      agent_id: agentId,
      period: 'total',
      limits: { cost_usd: 1 },
      action: 'warn',
    });
    expect(budget.status, budget.text).toBe(201);
    const spend = (cost: number) =>
      server.api.post('/api/v1/usage', { agent_id: agentId, model: 'm', input_tokens: 1, output_tokens: 1, cost_usd: cost });
    const fired = await cycle(
      { type: 'budget', budget_id: budget.body.data.id, fraction: 0.8 },
      async () => {
        expect((await spend(0.5)).status).toBe(201);
        await passes(2);
        expect((await server.api.get(`${A}?state=firing`)).body.data).toEqual([]);
        expect((await spend(0.35)).status).toBe(201);
      },
      async () => {
        expect((await server.api.patch(`/api/v1/budgets/${budget.body.data.id}`, { limits: { cost_usd: 2 } })).status).toBe(200);
      },
    );
    expect(fired).toMatchObject({ value: 85, detail: `spend (${budget.body.data.id})` });
  });

  it('repeats while firing every repeat_interval_s until acknowledged; a silence holds notifications back', async () => {
    const to = await channel();
    const worker = await server.agent('alert-repeat');
    const rule = await createRule({
      condition: { type: 'inbox_depth', agent_id: 'alert-repeat', threshold: 1 },
      channels: [to.id],
      repeat_interval_s: 60,
    });
    await worker.post(`${M}/send`, { destination: 'alert-repeat', event_name: 'job' });
    const alert = await alertOf(rule.id, 'firing');
    await waitFor(async () => (await told(to.agentId)).length === 1, 10_000);
    clock.advance(59_000);
    await passes(3);
    expect(await told(to.agentId)).toHaveLength(1);
    clock.advance(1_000);
    await waitFor(async () => (await told(to.agentId)).length === 2, 10_000);
    expect((await told(to.agentId))[1]).toBe(`Still firing: ${rule.name}`);

    const acked = await server.api.post(`${A}/${alert.id}/acknowledge`);
    expect(acked.status, acked.text).toBe(200);
    expect(acked.body.data).toMatchObject({ id: alert.id, state: 'firing', acknowledged_by: 'admin' });
    clock.advance(120_000);
    await passes(3);
    expect(await told(to.agentId)).toHaveLength(2);

    // Silenced: the resolution is logged, but no one is told.
    const until = new Date(clock.now() + 600_000).toISOString();
    expect((await server.api.patch(`${R}/${rule.id}`, { silenced_until: until })).body.data.silenced_until).toBe(until);
    await acknowledge(worker, (await receiveOne(worker, 'alert-repeat')).message_id);
    await alertOf(rule.id, 'resolved');
    await passes(3);
    expect(await told(to.agentId)).toHaveLength(2);
    expect((await server.api.post(`${A}/${alert.id}/acknowledge`)).status).toBe(409);

    // Fires again while silenced: no notification until the silence ends, then the repeat tells of it.
    await worker.post(`${M}/send`, { destination: 'alert-repeat', event_name: 'job' });
    const again = await alertOf(rule.id, 'firing');
    expect(again.id).not.toBe(alert.id);
    await passes(3);
    expect(await told(to.agentId)).toHaveLength(2);
    clock.advance(600_000);
    await waitFor(async () => (await told(to.agentId)).length === 3, 10_000);
    await acknowledge(worker, (await receiveOne(worker, 'alert-repeat')).message_id);
    await alertOf(rule.id, 'resolved');
  });

  it('permissions: webhooks:admin for rules and acknowledging, events:read to list alerts, never agent keys', async () => {
    const to = await channel();
    const rule = await createRule({ condition: { type: 'dead_letters', threshold: 1000 }, channels: [to.id] });
    const agent = await server.agent('alert-nosy');
    for (const [method, path] of [
      ['get', R],
      ['get', `${R}/${rule.id}`],
      ['post', R],
      ['patch', `${R}/${rule.id}`],
      ['delete', `${R}/${rule.id}`],
      ['get', A],
      ['post', `${A}/alt_x/acknowledge`],
    ] as const) {
      const res = method === 'get' || method === 'delete' ? await agent[method](path) : await agent[method](path, { name: 'x' });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    const viewer = await server.api.post('/api/v1/auth/keys', { name: 'viewer', role: 'viewer' });
    expect(viewer.status, viewer.text).toBe(201);
    const reader = server.api.withKey(viewer.body.data.key);
    expect((await reader.get(A)).status).toBe(200);
    expect((await reader.get(R)).status).toBe(403);
    expect((await server.api.get(`${A}/alt_missing`)).status).toBe(404);
  });

  it('validation: closed conditions, existing channels, bounds; nothing half written', async () => {
    const to = await channel();
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ condition: { type: 'budget', limit: 1 } }, /condition/],
      [{ condition: { type: 'event_count', event_type: 'nope.*', window_s: 60, threshold: 1 } }, /event_type/],
      [{ condition: { type: 'event_count', event_type: 'run.failed', window_s: 1, threshold: 1 } }, /window_s/],
      [{ condition: { type: 'inbox_depth', threshold: 0 } }, /threshold/],
      [{ condition: { type: 'agent_unhealthy', agent_id: 'a', capability: 'b', for_s: 1 } }, /not both/],
      [{ condition: { type: 'dead_letters', threshold: 1, extra: true } }, /condition/],
      [{ condition: { type: 'dead_letters', threshold: 1 }, channels: ['ntc_missing'] }, /ntc_missing/],
      [{ condition: { type: 'dead_letters', threshold: 1 }, channels: [] }, /channels/],
      [{ condition: { type: 'dead_letters', threshold: 1 }, repeat_interval_s: -1 }, /repeat_interval_s/],
      [{ condition: { type: 'dead_letters', threshold: 1 }, severity: 'panic' }, /severity/],
    ];
    for (const [body, message] of bad) {
      const res = await server.api.post(R, { name: 'bad', channels: [to.id], ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.text).toMatch(message);
    }
    expect((await server.api.get(R)).body.meta.total).toBe(0);
    const rule = await createRule({ condition: { type: 'dead_letters', threshold: 1000 }, channels: [to.id] });
    expect((await server.api.patch(`${R}/${rule.id}`, { channels: ['ntc_gone'] })).status).toBe(400);
    expect((await server.api.patch(`${R}/${rule.id}`, { silenced_until: 'tomorrow' })).status).toBe(400);
    expect((await server.api.get(`${R}/${rule.id}`)).body.data.channels).toEqual([to.id]);
    expect((await server.api.patch(`${R}/nope`, { enabled: false })).status).toBe(404);
    expect((await server.api.get(`${A}?state=burning`)).status).toBe(400);
  });
});
