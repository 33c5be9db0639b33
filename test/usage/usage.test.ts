import { afterEach, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { createAgent, Switchboard, withUsage } from '../../src/client/index.js';
import { acknowledge, receive, receiveOne } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { FakeClock } from '../helpers/clock.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { MessagingStore } from '../../src/messaging/store.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const U = '/api/v1/usage';
const P = '/api/v1/coordination/plans';
const R = '/api/v1/coordination/runs';

const report = (model: string, input: number, output: number, cost: number) => ({
  model,
  provider: 'test',
  input_tokens: input,
  output_tokens: output,
  cost_usd: cost,
});

describeEachDialect('usage', (dialect) => {
  const server = useServer(dialect);
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(stops.splice(0).map((stop) => stop()));
  });
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  async function totals(query: string) {
    const res = await server.api.get(`${U}?${query}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data.rows as { key: string | null; count: number; input_tokens: number; output_tokens: number; cost_usd: number }[];
  }

  /** A total budget of `agentId` that warns at half of `costUsd`; its id. */
  async function warningBudget(agentId: string, costUsd: number): Promise<string> {
    const res = await server.api.post('/api/v1/budgets', {
      agent_id: agentId,
      period: 'total',
      limits: { cost_usd: costUsd },
      warn_at: 0.5,
      action: 'warn',
    });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  }

  /** An agent channel of `agent`, granted `credit`: its frames, a send of a frame, and the ids of the first `credit` messages pushed. */
  async function channel(agent: Api, agentId: string, credit: number) {
    const socket = new WebSocket(`${agent.baseUrl.replace(/^http/, 'ws')}/api/v1/messaging/channel?agent_id=${agentId}`, {
      headers: { authorization: `Bearer ${agent.key}` },
    });
    stops.push(async () => socket.close());
    const frames: any[] = [];
    socket.on('message', (data) => frames.push(JSON.parse(String(data))));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    socket.send(JSON.stringify({ credit }));
    const pushed = () =>
      waitFor(() => {
        const got = frames.filter((f) => f.message).map((f) => f.message.message_id as string);
        return got.length === credit ? got : null;
      }, 10_000);
    return { frames, send: (frame: unknown) => socket.send(JSON.stringify(frame)), pushed };
  }

  async function sendWork(agentId: string, count: number) {
    for (let i = 0; i < count; i++) {
      const sent = await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'work', payload: { i } });
      expect(sent.status, sent.text).toBe(201);
    }
  }

  /** A run of a one-step plan whose step goes to the agent with `capability`. */
  async function runFor(agent: Api, agentId: string) {
    const capability = unique('summarize');
    await agent.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability });
    await agent.post('/api/v1/discovery/heartbeat', { agent_id: agentId });
    const plan = await server.api.post(P, { alias: unique('plan'), steps: [{ id: 'sum', type: 'agent', capability, input: {} }] });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post(R, { plan_id: plan.body.data.id, input: {} });
    expect(run.status, run.text).toBe(201);
    return { runId: run.body.data.id as string, planId: plan.body.data.id as string, capability };
  }

  it('records usage with an HTTP acknowledge, linked to the run, step, plan and capability, and totals it', async () => {
    const agentId = unique('worker');
    const agent = await server.agent(agentId);
    const { runId, planId, capability } = await runFor(agent, agentId);
    const message = await receiveOne(agent, agentId);
    const ack = await agent.post('/api/v1/messaging/acknowledge', {
      message_id: message.message_id,
      output: { ok: true },
      usage: { ...report('model-a', 100, 20, 0.5), cached_tokens: 10 },
    });
    expect(ack.status, ack.text).toBe(200);
    const run = await waitFor(async () => {
      const found = (await server.api.get(`${R}/${runId}`)).body.data;
      return found.status === 'completed' ? found : null;
    }, 15_000);

    const one = { count: 1, input_tokens: 100, output_tokens: 20, cached_tokens: 10, cost_usd: 0.5 };
    expect(run.usage).toEqual(one);
    expect(run.steps[0].usage).toEqual(one);
    expect(await totals(`group_by=run&run_id=${runId}`)).toEqual([{ key: runId, ...one }]);
    expect(await totals(`group_by=plan&plan_id=${planId}`)).toEqual([{ key: planId, ...one }]);
    expect(await totals(`group_by=capability&agent_id=${agentId}`)).toEqual([{ key: capability, ...one }]);
    expect(await totals(`group_by=model&agent_id=${agentId}`)).toEqual([{ key: 'model-a', ...one }]);
    expect(await totals(`group_by=agent&agent_id=${agentId}`)).toEqual([{ key: agentId, ...one }]);
    const today = new Date().toISOString().slice(0, 10);
    expect(await totals(`group_by=day&agent_id=${agentId}`)).toEqual([{ key: today, ...one }]);
    // The rollup is by hour: a window that ends before this hour holds nothing.
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    expect(await totals(`group_by=agent&agent_id=${agentId}&before=${hourAgo}`)).toEqual([]);
    expect(await totals(`group_by=agent&agent_id=${agentId}&after=${hourAgo}`)).toHaveLength(1);
  });

  it('validates the usage of an acknowledge and leaves the message unsettled when it is refused', async () => {
    const agentId = unique('validating');
    const agent = await server.agent(agentId);
    await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'work', payload: {} });
    const message = await receiveOne(agent, agentId);
    for (const usage of [
      { ...report('m', -1, 0, 0) },
      { ...report('m', 1, 0, 0), cost_usd: -0.1 },
      { ...report('m', 2_000_000_000, 0, 0) },
      { input_tokens: 1, output_tokens: 1 },
      { ...report('m', 1, 1, 0), extra: 1 },
    ]) {
      const res = await agent.post('/api/v1/messaging/acknowledge', { message_id: message.message_id, usage });
      expect(res.status, res.text).toBe(400);
    }
    const res = await agent.post('/api/v1/messaging/acknowledge', { message_ids: [message.message_id], usage: report('m', 1, 1, 0) });
    expect(res.status, res.text).toBe(400);
    await acknowledge(agent, message.message_id);
    expect(await totals(`group_by=agent&agent_id=${agentId}`)).toEqual([]);
  });

  it.each(['channel', 'poll'] as const)('records what an SDK agent worker handler reports with withUsage (%s)', async (transport) => {
    const agentId = unique(`sdk-${transport}`);
    const agent = await server.agent(agentId);
    const client = new Switchboard({ url: agent.baseUrl, apiKey: agent.key! });
    const worker = createAgent({ client, agentId, transport, concurrency: 1, heartbeatIntervalMs: 0, pollTimeoutSeconds: 1 });
    worker.on('*', () => withUsage({ done: true }, report('model-sdk', 7, 3, 0.25)));
    const started = worker.start();
    stops.push(async () => {
      await started;
      await worker.stop();
    });
    const sent = await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'work', payload: {} });
    expect(sent.status, sent.text).toBe(201);
    const rows = await waitFor(async () => {
      const found = await totals(`group_by=model&agent_id=${agentId}`);
      return found.length > 0 ? found : null;
    }, 10_000);
    expect(rows).toEqual([{ key: 'model-sdk', count: 1, input_tokens: 7, output_tokens: 3, cached_tokens: 0, cost_usd: 0.25 }]);
  });

  it('records the usage of a channel ack of several messages together, counted against budgets in order', async () => {
    const agentId = unique('batch');
    const agent = await server.agent(agentId);
    const budgetId = await warningBudget(agentId, 1);
    await sendWork(agentId, 3);
    const { frames, send, pushed } = await channel(agent, agentId, 3);
    const ids = await pushed();
    send({ id: 1, ack: ids.map((message_id) => ({ message_id, usage: report('model-batch', 10, 5, 0.3) })) });
    const answer = await waitFor(() => frames.find((f) => f.id === 1), 10_000);
    expect(answer.ok).toMatchObject({ acknowledged: ids });
    expect(await totals(`group_by=model&agent_id=${agentId}`)).toEqual([
      { key: 'model-batch', count: 3, input_tokens: 30, output_tokens: 15, cached_tokens: 0, cost_usd: expect.closeTo(0.9, 9) },
    ]);
    const spent = (await server.api.get(`/api/v1/budgets/${budgetId}`)).body.data;
    expect(spent).toMatchObject({ state: 'warning', spent: { tokens: 45 } });
    const warnings = (await server.api.get(`/api/v1/events?type=budget.warning&subject=${budgetId}`)).body.data;
    expect(warnings).toHaveLength(1);
  });

  it("records a lone channel ack's usage in the acknowledgement's own statement on PostgreSQL, unless a budget counts it", async () => {
    const agentId = unique('lean');
    const agent = await server.agent(agentId);
    const transactional = vi.spyOn(MessagingStore.prototype, 'acknowledgeReceived');
    const mine = () => transactional.mock.calls.filter(([, , destination]) => destination === agentId).length;
    try {
      await sendWork(agentId, 5);
      const { frames, send, pushed } = await channel(agent, agentId, 5);
      const ids = await pushed();
      const ack = async (n: number) => {
        send({ id: n, ack: [{ message_id: ids[n]!, usage: report('model-lean', 10, 5, 0.3) }] });
        expect((await waitFor(() => frames.find((f) => f.id === n), 10_000)).ok).toMatchObject({ acknowledged: [ids[n]] });
      };
      // No budget counts the agent: on PostgreSQL the records ride on the one-statement acknowledgements.
      for (const n of [0, 1, 2]) await ack(n);
      expect(await totals(`group_by=model&agent_id=${agentId}`)).toEqual([
        { key: 'model-lean', count: 3, input_tokens: 30, output_tokens: 15, cached_tokens: 0, cost_usd: expect.closeTo(0.9, 9) },
      ]);
      expect(mine()).toBe(dialect === 'postgres' ? 0 : 3);
      // A budget of the agent counts the next ones: they take the transaction, which spends it.
      const budgetId = await warningBudget(agentId, 10);
      for (const n of [3, 4]) await ack(n);
      expect(mine()).toBe(dialect === 'postgres' ? 2 : 5);
      expect((await server.api.get(`/api/v1/budgets/${budgetId}`)).body.data).toMatchObject({ spent: { tokens: 30 } });
      expect((await totals(`group_by=model&agent_id=${agentId}`))[0]).toMatchObject({ count: 5, input_tokens: 50 });
    } finally {
      transactional.mockRestore();
    }
  });

  it('a burst of acknowledgements with usage, batched by turn, records each once: totals, budgets and metrics add up', async () => {
    const PER_AGENT = 8;
    const agents = await Promise.all(
      [0, 1, 2].map(async () => {
        const agentId = unique('burst');
        const budgetId = await warningBudget(agentId, 0.75);
        return { agentId, api: await server.agent(agentId), budgetId };
      }),
    );
    const received = [];
    for (const { agentId, api } of agents) {
      for (let i = 0; i < PER_AGENT; i++)
        await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'work', payload: { i } });
      const messages = await waitFor(async () => {
        const got = await receive(api, agentId, 1, PER_AGENT);
        return got.length > 0 ? got : null;
      }, 10_000);
      const rest = messages.length < PER_AGENT ? await receive(api, agentId, 5, PER_AGENT - messages.length) : [];
      for (const message of [...messages, ...rest]) received.push({ api, agentId, messageId: message.message_id });
    }
    expect(received).toHaveLength(3 * PER_AGENT);
    // All at once: the server takes many of them in one turn, into one transaction.
    const acks = await Promise.all(
      received.map(({ api, messageId }) =>
        api.post('/api/v1/messaging/acknowledge', { message_id: messageId, usage: report('model-burst', 10, 5, 0.125) }),
      ),
    );
    for (const ack of acks) expect(ack.status, ack.text).toBe(200);
    for (const { agentId, api, budgetId } of agents) {
      expect(await totals(`group_by=model&agent_id=${agentId}`)).toEqual([
        { key: 'model-burst', count: PER_AGENT, input_tokens: 10 * PER_AGENT, output_tokens: 5 * PER_AGENT, cached_tokens: 0, cost_usd: 1 },
      ]);
      const spent = (await server.api.get(`/api/v1/budgets/${budgetId}`)).body.data;
      expect(spent).toMatchObject({ state: 'exceeded', spent: { cost_usd: 1, tokens: 15 * PER_AGENT } });
      // Crossed once each, at the 4th and the 6th record of the agent, whichever batch they fell in.
      for (const type of ['budget.warning', 'budget.exceeded']) {
        const crossings = (await server.api.get(`/api/v1/events?type=${type}&subject=${budgetId}`)).body.data;
        expect(crossings, type).toHaveLength(1);
      }
      expect(await receive(api, agentId, 0)).toEqual([]);
    }
    const metrics = (await server.api.get('/metrics')).text;
    for (const { agentId } of agents) {
      expect(metrics).toContain(`switchboard_usage_tokens_total{agent="${agentId}",model="model-burst",kind="input"} ${10 * PER_AGENT}`);
      expect(metrics).toContain(`switchboard_usage_cost_usd_total{agent="${agentId}",model="model-burst"} 1`);
    }
  });

  it('records usage on its own: an agent only as itself, a run it names must exist', async () => {
    const agentId = unique('own');
    const agent = await server.agent(agentId);
    const mine = await agent.post(U, { agent_id: agentId, ...report('model-b', 5, 6, 0.01) });
    expect(mine.status, mine.text).toBe(201);
    expect(mine.body.data).toMatchObject({ agent_id: agentId, model: 'model-b', input_tokens: 5, run_id: null, message_id: null });
    const other = await agent.post(U, { agent_id: unique('someone-else'), ...report('model-b', 1, 1, 0) });
    expect(other.status, other.text).toBe(403);
    const noRun = await agent.post(U, { agent_id: agentId, run_id: 'run_missing', ...report('model-b', 1, 1, 0) });
    expect(noRun.status, noRun.text).toBe(404);
    const stepAlone = await agent.post(U, { agent_id: agentId, step_id: 'sum', ...report('model-b', 1, 1, 0) });
    expect(stepAlone.status, stepAlone.text).toBe(400);
    // An admin records any agent's, here against a run; agents cannot read the totals.
    const { runId } = await runFor(agent, agentId);
    const admin = await server.api.post(U, { agent_id: agentId, run_id: runId, step_id: 'sum', ...report('model-b', 10, 0, 1) });
    expect(admin.status, admin.text).toBe(201);
    expect(admin.body.data).toMatchObject({ run_id: runId, step_id: 'sum' });
    expect((await agent.get(`${U}?group_by=agent`)).status).toBe(403);
    expect(await totals(`group_by=model&agent_id=${agentId}`)).toEqual([
      { key: 'model-b', count: 2, input_tokens: 15, output_tokens: 6, cached_tokens: 0, cost_usd: 1.01 },
    ]);
    const bad = await server.api.get(`${U}?group_by=colour`);
    expect(bad.status).toBe(400);

    const metrics = (await server.api.get('/metrics')).text;
    expect(metrics).toContain(`switchboard_usage_tokens_total{agent="${agentId}",model="model-b",kind="input"} 15`);
    expect(metrics).toMatch(new RegExp(`switchboard_usage_cost_usd_total\\{agent="${agentId}",model="model-b"\\} 1\\.01`));
  });
});

describeEachDialect('usage rollup', (dialect) => {
  const database = useTestDatabase(dialect);

  it('merges the hours of days before yesterday into a row per day, with every total unchanged', async () => {
    const HOUR = 3_600_000;
    const DAY = 24 * HOUR;
    const start = Math.floor(Date.now() / DAY) * DAY - 10 * DAY;
    const clock = new FakeClock(start + HOUR);
    const server = await startServer(dialect, { database: database(), clock });
    try {
      const totals = async (query: string) => {
        const res = await server.api.get(`${U}?${query}`);
        expect(res.status, res.text).toBe(200);
        return res.body.data.rows as unknown[];
      };
      // Two days of usage, three hours each, by two agents and two models.
      for (const day of [0, 1])
        for (const hour of [1, 5, 23]) {
          clock.set(start + day * DAY + hour * HOUR + 60_000);
          for (const [agent, model] of [
            ['merge-a', 'model-x'],
            ['merge-b', 'model-y'],
            ['merge-a', 'model-y'],
          ] as const)
            expect((await server.api.post(U, { agent_id: agent, ...report(model, hour, day, 0.25) })).status).toBe(201);
        }
      const queries = [
        'group_by=day',
        'group_by=agent',
        'group_by=model&agent_id=merge-a',
        `group_by=day&after=${new Date(start).toISOString()}`,
      ];
      const before = await Promise.all(queries.map(totals));
      const hourly = () => server.app.platform.database.db.selectFrom('usage_hourly').select('hour').execute();
      expect(await hourly()).toHaveLength(18);

      // On day 2, day 0 is before yesterday: merged; day 1 is not yet.
      clock.set(start + 2 * DAY + HOUR);
      await server.app.retention.pass();
      expect((await hourly()).map((row) => Number(row.hour)).filter((hour) => hour < start + DAY)).toEqual([start, start, start]);
      expect(await hourly()).toHaveLength(12);
      clock.set(start + 3 * DAY + HOUR);
      await server.app.retention.pass();
      expect(await hourly()).toHaveLength(6);
      expect(await Promise.all(queries.map(totals))).toEqual(before);
      // Nothing left to merge: a pass leaves the rows as they are.
      await server.app.retention.pass();
      expect(await hourly()).toHaveLength(6);
      const metrics = (await server.api.get('/metrics')).text;
      expect(metrics).toContain('switchboard_retention_deleted_total{table="usage_hourly"} 12');
    } finally {
      await server.close();
    }
  });
});
