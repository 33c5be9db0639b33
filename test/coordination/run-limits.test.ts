import { expect, it } from 'vitest';
import { acknowledge, receiveOne, runAgent } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { waitFor } from '../helpers/wait.js';
import { R, useCoordination } from './fixture.js';

/** The value of the blocked runs gauge for one reason. */
function blockedGauge(metrics: string, blockedBy: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`switchboard_runs_blocked{blocked_by="${blockedBy}"}`));
  return Number(line?.split(' ')[1]);
}

/** Flow control of runs: plans' concurrency and rate limits, priority, and steps waiting for an agent. */
describeEachDialect('coordination run limits', (dialect) => {
  const { server, loops, unique, plan, start, getRun, finished } = useCoordination(dialect);
  const statusOf = async (id: string) => (await getRun(id)).status as string;
  const becomes = (id: string, status: string, timeoutMs = 10_000) =>
    waitFor(async () => {
      const run = await getRun(id);
      return run.status === status ? run : null;
    }, timeoutMs);

  it('a capability step with no agent waits (blocked_by no_agent) and runs when an agent registers', async () => {
    const capability = unique('late.capability');
    const id = await plan({ steps: [{ id: 'work', type: 'agent', capability, input: { n: 1 } }] });
    const run = await start(id);
    expect(run).toMatchObject({ status: 'waiting', blocked_by: 'no_agent' });
    expect(run.steps[0]).toMatchObject({ id: 'work', status: 'waiting', blocked_by: 'no_agent', agent: null });
    const waiting = await server.api.get(`${R}?status=waiting&plan_id=${id}`);
    expect(waiting.body.data.map((r: any) => r.id)).toEqual([run.id]);
    expect(blockedGauge((await server.api.get('/metrics')).text, 'no_agent')).toBeGreaterThanOrEqual(1);

    const worker = unique('late-worker');
    const client = await server.agent(worker);
    loops.push(runAgent(client, worker, (m) => ({ output: { got: m.payload.input } })));
    await client.post('/api/v1/discovery/capabilities', { agent_id: worker, capability });
    const done = await finished(run.id);
    expect(done.blocked_by).toBeNull();
    expect(done.steps[0]).toMatchObject({ status: 'completed', agent: worker, blocked_by: null, output: { got: { n: 1 } } });
    const events = (await server.api.get(`${R}/${run.id}/events`)).body.data.map((e: any) => e.type);
    expect(events).toEqual(expect.arrayContaining(['step.blocked', 'step.unblocked', 'step.completed']));
  });

  it('a step still without an agent at its timeout fails', async () => {
    const capability = unique('never.there');
    const id = await plan({ steps: [{ id: 'work', type: 'agent', capability, timeout_seconds: 1 }] });
    const run = await finished((await start(id)).id, 'failed');
    expect(run.steps[0]).toMatchObject({ status: 'failed', blocked_by: null });
    expect(run.steps[0].error).toContain(`no healthy agent offered capability '${capability}' within 1 s`);
  });

  it('concurrency queue: runs over the limit of their key are queued and start by priority, then arrival', async () => {
    const worker = unique('slow');
    const client = await server.agent(worker);
    const id = await plan({
      concurrency: { limit: 1, key: '{{input.customer}}' },
      steps: [{ id: 'work', type: 'agent', agent: worker, input: { name: '{{input.name}}' } }],
    });
    const a = await start(id, { customer: 'c1', name: 'a' });
    const b = await start(id, { customer: 'c1', name: 'b' });
    const c = await start(id, { customer: 'c2', name: 'c' });
    const d = await start(id, { customer: 'c1', name: 'd' }, { priority: 9 });
    expect([a.status, b.status, c.status, d.status]).toEqual(['running', 'queued', 'running', 'queued']);
    expect(b).toMatchObject({ blocked_by: 'concurrency', priority: 4, current_step: null });
    expect(b.steps[0]).toMatchObject({ status: 'pending' });
    expect(d.priority).toBe(9);
    const queued = await server.api.get(`${R}?status=queued&plan_id=${id}`);
    expect(queued.body.data.map((r: any) => r.id).sort()).toEqual([b.id, d.id].sort());
    expect(blockedGauge((await server.api.get('/metrics')).text, 'concurrency')).toBeGreaterThanOrEqual(2);

    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      const message = await receiveOne(client, worker);
      order.push(message.payload.input.name);
      await acknowledge(client, message.message_id, {});
    }
    expect(order.slice(0, 2).sort()).toEqual(['a', 'c']);
    expect(order.slice(2)).toEqual(['d', 'b']);
    for (const run of [a, b, c, d]) await finished(run.id);
    const events = (await server.api.get(`${R}/${b.id}/events`)).body.data.map((e: any) => e.type);
    expect(events.slice(0, 3)).toEqual(['run.started', 'run.queued', 'run.dequeued']);
  });

  it('a queued run can be cancelled and never starts', async () => {
    const worker = unique('held');
    const client = await server.agent(worker);
    const id = await plan({ concurrency: { limit: 1 }, steps: [{ id: 'work', type: 'agent', agent: worker }] });
    const first = await start(id);
    const second = await start(id);
    expect(second.status).toBe('queued');
    const cancelled = await server.api.post(`${R}/${second.id}/cancel`, {});
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', blocked_by: null });
    const message = await receiveOne(client, worker);
    await acknowledge(client, message.message_id, {});
    await finished(first.id);
    expect(await statusOf(second.id)).toBe('cancelled');
  });

  it("a redriven run is under its plan's limits again: queued while the slot is taken", async () => {
    const worker = unique('flaky');
    const client = await server.agent(worker);
    const id = await plan({ concurrency: { limit: 1 }, steps: [{ id: 'work', type: 'agent', agent: worker }] });
    const first = await start(id);
    const failing = await receiveOne(client, worker);
    expect((await client.post('/api/v1/messaging/reject', { message_id: failing.message_id, reason: 'no', requeue: false })).status).toBe(
      200,
    );
    await finished(first.id, 'failed');
    const second = await start(id);
    expect(second.status).toBe('running');
    const redriven = await server.api.post(`${R}/${first.id}/redrive`, {});
    expect(redriven.status, redriven.text).toBe(200);
    expect(redriven.body.data).toMatchObject({ status: 'queued', blocked_by: 'concurrency' });
    const message = await receiveOne(client, worker);
    expect(message.payload.run_id).toBe(second.id);
    await acknowledge(client, message.message_id, {});
    await finished(second.id);
    const again = await receiveOne(client, worker);
    expect(again.payload.run_id).toBe(first.id);
    await acknowledge(client, again.message_id, {});
    await finished(first.id);
  });

  it('concurrency cancel_new cancels a start over the limit; cancel_oldest cancels the oldest active run', async () => {
    const worker = unique('held');
    const newest = await plan({ concurrency: { limit: 1, on_limit: 'cancel_new' }, steps: [{ id: 'w', type: 'agent', agent: worker }] });
    const kept = await start(newest);
    const refused = await start(newest);
    expect(refused).toMatchObject({ status: 'cancelled', error: "the plan's concurrency limit (1) was reached" });
    expect(await statusOf(kept.id)).toBe('running');

    const oldest = await plan({ concurrency: { limit: 2, on_limit: 'cancel_oldest' }, steps: [{ id: 'w', type: 'agent', agent: worker }] });
    const [one, two] = [await start(oldest), await start(oldest)];
    const three = await start(oldest);
    expect(three.status).toBe('running');
    expect(await getRun(one.id)).toMatchObject({ status: 'cancelled' });
    expect((await getRun(one.id)).error).toContain('concurrency limit');
    expect(await statusOf(two.id)).toBe('running');
  });

  it('rate_limit: starts over the rate are queued (blocked_by rate_limit) until the window lets them through', async () => {
    const id = await plan({
      rate_limit: { limit: 2, period_s: 1, key: '{{input.tenant}}' },
      steps: [{ id: 'done', type: 'transform', output: { ok: true } }],
    });
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await start(id, { tenant: 't1' }));
    const other = await start(id, { tenant: 't2' });
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed', 'queued']);
    expect(runs[2]).toMatchObject({ blocked_by: 'rate_limit' });
    expect(other.status).toBe('completed');
    const later = await becomes(runs[2].id, 'completed', 5000);
    expect(Date.parse(later.completed_at) - Date.parse(runs[0].started_at)).toBeGreaterThanOrEqual(900);
  });

  it('rate_limit: queued runs go through as windows open by priority, then arrival', async () => {
    const id = await plan({
      rate_limit: { limit: 1, period_s: 1 },
      steps: [{ id: 'done', type: 'transform', output: { ok: true } }],
    });
    const first = await start(id, {});
    const queued = [];
    for (const priority of [1, 9, 5, 9]) queued.push(await start(id, {}, { priority }));
    expect([first.status, ...queued.map((r) => r.status)]).toEqual(['completed', 'queued', 'queued', 'queued', 'queued']);
    const done = [];
    for (const run of queued) done.push(await becomes(run.id, 'completed', 10_000));
    const order = done
      .map((run, i) => ({ i, at: Date.parse(run.completed_at) }))
      .sort((x, y) => x.at - y.at)
      .map((r) => r.i);
    expect(order).toEqual([1, 3, 2, 0]);
  });

  it('plans show their limits; bad limits are refused', async () => {
    const limits = {
      concurrency: { limit: 3, key: '{{input.k}}', on_limit: 'queue' },
      rate_limit: { limit: 5, period_s: 60 },
      priority: 7,
    };
    const id = await plan({ ...limits, steps: [{ id: 't', type: 'transform', output: {} }] });
    expect((await server.api.get(`/api/v1/coordination/plans/${id}`)).body.data).toMatchObject(limits);
    const run = await start(id, { k: 'x' });
    expect(run.priority).toBe(7);
    for (const bad of [
      { concurrency: { limit: 0 } },
      { rate_limit: { limit: 1 } },
      { priority: 10 },
      { concurrency: { limit: 1, on_limit: 'drop' } },
    ]) {
      const res = await server.api.post('/api/v1/coordination/plans', {
        alias: unique('bad'),
        ...bad,
        steps: [{ id: 't', type: 'transform', output: {} }],
      });
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await server.api.post(R, { plan_id: id, priority: -1 })).status).toBe(400);
  });
});
