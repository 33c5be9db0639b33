import { expect, it } from 'vitest';
import type { RunEngine } from '../../src/coordination/engine.js';
import { PlanStore } from '../../src/coordination/plan-store.js';
import { TriggerStore } from '../../src/coordination/trigger-store.js';
import { TriggerFiring } from '../../src/coordination/trigger-firing.js';
import { DebounceStore } from '../../src/debounce/store.js';
import { autocommit } from '../../src/kernel/tx.js';
import { acknowledge, receive, type InboxMessage } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { createTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const P = '/api/v1/coordination/plans';
const T = '/api/v1/coordination/triggers';
const R = '/api/v1/coordination/runs';

describeEachDialect('coordination triggers', (dialect) => {
  const server = useServer(dialect);
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  /** A plan whose output is its input (a transform), so a run shows the mapped input at once. */
  async function echoPlan(): Promise<string> {
    const res = await server.api.post(P, {
      alias: unique('echo'),
      steps: [{ id: 'echo', type: 'transform', output: { got: '{{input}}' } }],
    });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id;
  }

  async function trigger(body: Record<string, unknown>) {
    const res = await server.api.post(T, body);
    expect(res.status, res.text).toBe(201);
    return res.body.data;
  }

  const runsOf = async (planId: string) => (await server.api.get(`${R}?plan_id=${planId}&limit=500`)).body.data as any[];
  const fires = async (id: string) => (await server.api.get(`${T}/${id}/fires`)).body.data as any[];

  it('creates, reads, lists, updates and deletes triggers, with validation', async () => {
    const plan = await echoPlan();
    const created = await trigger({
      plan_id: plan,
      type: 'event',
      config: { topic: 'orders.*' },
      input: { source: 'shop' },
      input_mapping: { order: '{{event.id}}' },
    });
    expect(created).toMatchObject({
      plan_id: plan,
      type: 'event',
      enabled: true,
      input: { source: 'shop' },
      next_fire_at: null,
      last_fired_at: null,
    });
    expect(created.id).toMatch(/^trg_/);
    expect((await server.api.get(`${T}/${created.id}`)).body.data).toEqual(created);
    expect((await server.api.get(`${T}?plan_id=${plan}`)).body.data.map((t: any) => t.id)).toEqual([created.id]);
    const paused = await server.api.patch(`${T}/${created.id}`, { enabled: false });
    expect(paused.body.data.enabled).toBe(false);

    const cases: [Record<string, unknown>, number, string][] = [
      [{ plan_id: 'nope', type: 'event', config: { topic: 'a' } }, 404, 'not_found'],
      [{ plan_id: plan, type: 'schedule', config: { cron: 'every day' } }, 400, 'config.cron'],
      [{ plan_id: plan, type: 'schedule', config: { cron: '* * * * *', timezone: 'Mars/Base' } }, 400, 'config.timezone'],
      [{ plan_id: plan, type: 'event', config: {} }, 400, 'config.topic'],
      [{ plan_id: plan, type: 'event', config: { topic: 'a', filter: 'amount >' } }, 400, 'config.filter'],
      [{ plan_id: plan, type: 'event', config: { topic: 'a', cron: '* * * * *' } }, 400, 'config.cron'],
      [{ plan_id: plan, type: 'event', config: { topic: 'a' }, input_mapping: { x: '{{input.y}}' } }, 400, 'input_mapping'],
      [{ plan_id: plan, type: 'webhook', config: { path: '../etc' } }, 400, 'config.path'],
      [{ plan_id: plan, type: 'webhook', config: { path: 'x', method: 'TRACE' } }, 400, 'config.method'],
      [{ plan_id: plan, type: 'carrier-pigeon', config: {} }, 400, 'type'],
    ];
    for (const [body, status, field] of cases) {
      const res = await server.api.post(T, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      if (status === 400)
        expect(
          res.body.error.details.map((d: any) => d.field),
          JSON.stringify(body),
        ).toContain(field);
    }
    const path = unique('dup/path');
    await trigger({ plan_id: plan, type: 'webhook', config: { path } });
    expect((await server.api.post(T, { plan_id: plan, type: 'webhook', config: { path } })).status).toBe(409);

    expect((await server.api.delete(`${T}/${created.id}`)).body.data).toEqual({ id: created.id, deleted: true });
    expect((await server.api.get(`${T}/${created.id}`)).status).toBe(404);
    // Deleting the plan deletes its triggers.
    await server.api.delete(`${P}/${plan}`);
    expect((await server.api.get(`${T}?plan_id=${plan}`)).body.data).toEqual([]);
  });

  it('an event trigger starts a run per matching publish with the mapped input; filters and disabled triggers start none', async () => {
    const plan = await echoPlan();
    const topic = unique('orders');
    const all = await trigger({
      plan_id: plan,
      type: 'event',
      config: { topic: `${topic}.*` },
      input: { fixed: true },
      input_mapping: { order: '{{event.id}}', amount: '{{event.amount}}', via: '{{event.topic}}' },
    });
    const big = await trigger({
      plan_id: plan,
      type: 'event',
      config: { topic: `${topic}.paid`, filter: 'event.amount > 100' },
      input_mapping: { big: '{{event.id}}' },
    });
    const off = await trigger({ plan_id: plan, type: 'event', config: { topic: `${topic}.paid` }, enabled: false, input: { off: true } });
    const publisher = await server.agent(unique('shop'));
    const published = await publisher.post('/api/v1/messaging/publish', { topic: `${topic}.paid`, payload: { id: 'o-1', amount: 5 } });
    expect(published.status).toBe(201);
    await publisher.post('/api/v1/messaging/publish', { topic: `${topic}.paid`, payload: { id: 'o-2', amount: 500 } });
    await publisher.post('/api/v1/messaging/publish', { topic: 'elsewhere', payload: { id: 'o-3' } });

    const runs = await waitFor(async () => {
      const list = await runsOf(plan);
      return list.length >= 3 ? list : null;
    });
    const inputs = runs.map((r) => r.input).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    expect(inputs).toEqual([
      { big: 'o-2' },
      { fixed: true, order: 'o-1', amount: 5, via: `${topic}.paid` },
      { fixed: true, order: 'o-2', amount: 500, via: `${topic}.paid` },
    ]);
    expect(runs.every((r) => r.status === 'completed')).toBe(true);
    expect((await fires(all.id)).map((f) => f.outcome)).toEqual(['started', 'started']);
    expect((await fires(big.id)).map((f) => f.outcome).sort()).toEqual(['filtered', 'started']);
    expect(await fires(off.id)).toEqual([]);
    const run = await server.api.get(`${R}/${(await fires(all.id))[0].run_id}`);
    expect(run.body.data.input.fixed).toBe(true);
    expect(run.body.data.plan_version).toBe(1);

    // A new plan version is what the next event starts (cached plans are dropped on update).
    const alias = (await server.api.get(`${P}/${plan}`)).body.data.alias;
    await server.api.put(`${P}/${plan}`, { alias, steps: [{ id: 'echo', type: 'transform', output: { v: 2 } }] });
    await publisher.post('/api/v1/messaging/publish', { topic: `${topic}.shipped`, payload: { id: 'o-9' } });
    const newest = await waitFor(async () => (await runsOf(plan)).find((r) => r.input.order === 'o-9'));
    expect(newest.plan_version).toBe(2);

    // Runs start while the publish is handled, so once it returns the count is final.
    const before = (await runsOf(plan)).length;
    await server.api.patch(`${T}/${all.id}`, { enabled: false });
    await publisher.post('/api/v1/messaging/publish', { topic: `${topic}.paid`, payload: { id: 'o-10', amount: 1 } });
    expect((await runsOf(plan)).length).toBe(before);
    expect((await fires(all.id)).length).toBe(3);

    // A filter that fails on the event starts nothing and says why.
    const broken = await trigger({ plan_id: plan, type: 'event', config: { topic: `${topic}.paid`, filter: '$error("no amount")' } });
    await publisher.post('/api/v1/messaging/publish', { topic: `${topic}.paid`, payload: { id: 'o-11' } });
    expect((await runsOf(plan)).length).toBe(before);
    expect(await fires(broken.id)).toEqual([
      expect.objectContaining({ outcome: 'failed', run_id: null, reason: expect.stringMatching(/no amount/) }),
    ]);
  });

  it('publishes at once start one run per trigger and event, each with its own input, fire and step message', async () => {
    const worker = unique('order-handler');
    const client = await server.agent(worker);
    const plan = (
      await server.api.post(P, {
        alias: unique('handle-order'),
        steps: [{ id: 'handle', type: 'agent', agent: worker, input: { order: '{{input.order}}' } }],
      })
    ).body.data.id;
    const topic = unique('shop');
    const first = await trigger({
      plan_id: plan,
      type: 'event',
      config: { topic: `${topic}.*` },
      input_mapping: { order: '{{event.id}}' },
    });
    const second = await trigger({
      plan_id: plan,
      type: 'event',
      config: { topic: `${topic}.paid`, filter: 'event.n % 2 = 0' },
      input: { even: true },
      input_mapping: { order: '{{event.id}}' },
    });
    const publisher = await server.agent(unique('shop'));
    const count = 30;
    // Sent together, so several are handled in one transaction.
    const published = await Promise.all(
      Array.from({ length: count }, (_, n) =>
        publisher.post('/api/v1/messaging/publish', { topic: `${topic}.paid`, payload: { id: `o-${n}`, n } }),
      ),
    );
    expect(published.map((r) => r.status)).toEqual(published.map(() => 201));

    // Runs start while the publish is handled: every one is there once the publishes returned.
    const runs = await runsOf(plan);
    expect(runs).toHaveLength(count + count / 2);
    const byTrigger = (id: string) => runs.filter((r) => r.created_by === `trigger:${id}`);
    expect(
      byTrigger(first.id)
        .map((r) => r.input.order)
        .sort(),
    ).toEqual(Array.from({ length: count }, (_, n) => `o-${n}`).sort());
    expect(
      byTrigger(second.id)
        .map((r) => r.input)
        .sort((a, b) => a.order.localeCompare(b.order)),
    ).toEqual(
      Array.from({ length: count / 2 }, (_, i) => ({ even: true, order: `o-${2 * i}` })).sort((a, b) => a.order.localeCompare(b.order)),
    );
    expect(runs.every((r) => r.status === 'running' && r.steps[0].status === 'running')).toBe(true);
    for (const run of runs) expect(run.steps[0].input).toEqual({ order: run.input.order });

    // Each started fire names its run; the filtered ones none.
    const firstFires = (await server.api.get(`${T}/${first.id}/fires?limit=100`)).body.data as any[];
    const secondFires = (await server.api.get(`${T}/${second.id}/fires?limit=100`)).body.data as any[];
    expect(new Set(firstFires.map((f) => f.run_id))).toEqual(new Set(byTrigger(first.id).map((r) => r.id)));
    expect(
      secondFires
        .filter((f) => f.outcome === 'started')
        .map((f) => f.run_id)
        .sort(),
    ).toEqual(
      byTrigger(second.id)
        .map((r) => r.id)
        .sort(),
    );
    expect(secondFires.filter((f) => f.outcome === 'filtered')).toHaveLength(count / 2);

    // One step message per run, carrying that run's input.
    const messages: InboxMessage[] = [];
    await waitFor(async () => {
      messages.push(...(await receive(client, worker, 1, 50)));
      return messages.length >= runs.length;
    });
    const inputOf = new Map(runs.map((r) => [r.id, r.steps[0].input]));
    expect(messages.map((m) => m.payload.run_id).sort()).toEqual(runs.map((r) => r.id).sort());
    for (const m of messages) expect(m.payload.input).toEqual(inputOf.get(m.payload.run_id as string));
    await acknowledge(client, messages[0]!.message_id, { done: true });
    const done = await waitFor(async () => {
      const run = (await server.api.get(`${R}/${messages[0]!.payload.run_id}`)).body.data;
      return run.status === 'completed' ? run : null;
    });
    expect(done.output).toEqual({ handle: { done: true } });
  });

  it('an event whose runs fail to start does not undo the runs of the events started with it', async () => {
    const plan = await echoPlan();
    const topic = unique('mixed');
    const created = await trigger({ plan_id: plan, type: 'event', config: { topic }, input_mapping: { id: '{{event.id}}' } });
    const { db, caps } = server.app.platform.database;
    let batches = 0;
    // An engine that fails any batch holding the 'bad' event (as a failing write would).
    const engine = {
      startMany: async (_trx: unknown, specs: { input: Record<string, unknown> }[]) => {
        batches++;
        if (specs.some((spec) => spec.input.id === 'bad')) throw new Error('cannot start bad');
        return specs.map((_, i) => ({ id: `run_fake_${batches}_${i}` }));
      },
    } as unknown as RunEngine;
    const triggers = new TriggerFiring({
      triggers: new TriggerStore(db, caps),
      debounces: new DebounceStore(db, caps, 'trigger'),
      plans: new PlanStore(db, caps),
      engine,
      clock: new FakeClock(Date.now()),
      expressions: server.app.platform.expressions,
      audit: server.app.platform.audit,
      notifier: server.app.platform.notifier,
    });
    const event = (id: string, on = topic) => ({
      topic: on,
      event: async () => ({ topic: on, payload: { id }, published_at: new Date().toISOString(), publisher: 'test' }),
    });
    // Triggers read (an event nothing matches), so the three below are handled in the same turn.
    expect(await triggers.onEvent(event('none', unique('unmatched')))).toBe(0);
    const outcomes = await Promise.allSettled([triggers.onEvent(event('a')), triggers.onEvent(event('bad')), triggers.onEvent(event('b'))]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([1, 'cannot start bad', 1]);
    // One batch for the three, then each on its own.
    expect(batches).toBe(4);
    const ledger = (await server.api.get(`${T}/${created.id}/fires`)).body.data as any[];
    expect(ledger.map((f) => [f.outcome, f.run_id]).sort()).toEqual([
      ['started', 'run_fake_2_0'],
      ['started', 'run_fake_4_0'],
    ]);
  });

  it('a webhook trigger starts a run from the request body and query; path and method errors', async () => {
    const plan = await echoPlan();
    const path = unique('github/push');
    const hook = await trigger({
      plan_id: plan,
      type: 'webhook',
      config: { path },
      input_mapping: { repo: '{{event.repository}}', ref: '{{event.ref}}' },
    });
    expect(hook.config).toEqual({ path, method: 'POST' });
    const res = await server.api.post(`/api/v1/coordination/hooks/${path}?ref=main`, { repository: 'switchboard' });
    expect(res.status, res.text).toBe(202);
    const run = await waitFor(async () => {
      const current = (await server.api.get(`${R}/${res.body.data.run_id}`)).body.data;
      return current.status === 'completed' ? current : null;
    });
    expect(run.input).toEqual({ repo: 'switchboard', ref: 'main' });
    expect((await server.api.get(`${T}/${hook.id}`)).body.data.last_fired_at).not.toBeNull();
    const wrong = await server.api.get(`/api/v1/coordination/hooks/${path}`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect((await server.api.post('/api/v1/coordination/hooks/no/such/path', {})).status).toBe(404);
    expect((await server.api.request('POST', `/api/v1/coordination/hooks/${path}`, { body: {}, key: null })).status).toBe(401);
    await server.api.patch(`${T}/${hook.id}`, { enabled: false });
    expect((await server.api.post(`/api/v1/coordination/hooks/${path}`, {})).status).toBe(409);
    expect((await fires(hook.id)).map((f) => f.outcome)).toEqual(['started']);
  });

  it('a webhook path written with a leading slash is kept as given and matched with or without it', async () => {
    const plan = await echoPlan();
    const bare = unique('hooks/github');
    const hook = await trigger({ plan_id: plan, type: 'webhook', config: { path: `/${bare}` }, input_mapping: { n: '{{event.n}}' } });
    expect(hook.config).toEqual({ path: `/${bare}`, method: 'POST' });
    expect((await server.api.get(`${T}/${hook.id}`)).body.data.config.path).toBe(`/${bare}`);
    for (const [n, url] of [`/api/v1/coordination/hooks/${bare}`, `/api/v1/coordination/hooks//${bare}`].entries()) {
      const res = await server.api.post(`${url}?n=${n}`, {});
      expect(res.status, `${url}: ${res.text}`).toBe(202);
      const run = await waitFor(async () => {
        const current = (await server.api.get(`${R}/${res.body.data.run_id}`)).body.data;
        return current.status === 'completed' ? current : null;
      });
      expect(run.input).toEqual({ n: String(n) });
    }
    // One path, however it is written.
    const taken = await server.api.post(T, { plan_id: plan, type: 'webhook', config: { path: bare } });
    expect(taken.status).toBe(409);
    const other = unique('plain/path');
    const plain = await trigger({ plan_id: plan, type: 'webhook', config: { path: other } });
    expect((await server.api.post(`/api/v1/coordination/hooks//${other}`, {})).status).toBe(202);
    const moved = await server.api.patch(`${T}/${plain.id}`, { config: { path: `/${other}/v2` } });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.config.path).toBe(`/${other}/v2`);
    expect((await server.api.post(`/api/v1/coordination/hooks/${other}/v2`, {})).status).toBe(202);
    for (const path of ['//two-slashes', '/', '/../etc']) {
      expect((await server.api.post(T, { plan_id: plan, type: 'webhook', config: { path } })).status, path).toBe(400);
    }
  });

  it('plan steps read event.* of the event that started the run; mappings see topic and published_at; a non-object payload is event.payload', async () => {
    const topic = unique('signups');
    const planId = (
      await server.api.post(P, {
        alias: unique('welcome'),
        steps: [
          {
            id: 'greet',
            type: 'transform',
            output: { hello: 'Hello {{event.name}}', age: '{{event.age}}', topic: '{{event.topic}}', at: '{{event.published_at}}' },
          },
          { id: 'shape', type: 'transform', expression: '{"next": event.age + 1, "fromInput": input.who}', depends_on: ['greet'] },
        ],
      })
    ).body.data.id;
    await trigger({
      plan_id: planId,
      type: 'event',
      config: { topic },
      input_mapping: { who: '{{event.name}}', when: '{{event.published_at}}', raw: '{{event.payload}}' },
    });
    const publisher = await server.agent(unique('signup-service'));
    expect((await publisher.post('/api/v1/messaging/publish', { topic, payload: { name: 'Ada', age: 36 } })).status).toBe(201);
    const [run] = await waitFor(async () => {
      const list = await runsOf(planId);
      return list.length === 1 ? list : null;
    });
    expect(run.status).toBe('completed');
    expect(run.input).toEqual({ who: 'Ada', when: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), raw: null });
    expect(run.output).toEqual({ shape: { next: 37, fromInput: 'Ada' } });
    expect(run.steps[0].output).toEqual({ hello: 'Hello Ada', age: 36, topic, at: run.input.when });

    // A payload that is not an object is event.payload.
    expect((await publisher.post('/api/v1/messaging/publish', { topic, payload: 42 })).status).toBe(201);
    const second = await waitFor(async () => (await runsOf(planId)).find((r) => r.input.raw === 42));
    expect(second.input.who).toBeNull();
    expect(second.steps[0].output.hello).toBe('Hello ');
  });

  it('webhooks accept a normal agent key, any configured method with the query as event.*, and keep paths unique on update', async () => {
    const planId = (
      await server.api.post(P, {
        alias: unique('hooked'),
        steps: [{ id: 'see', type: 'transform', output: { repo: '{{event.repo}}', body: '{{event.body}}', q: '{{event.q}}' } }],
      })
    ).body.data.id;
    const getPath = unique('status/check');
    const putPath = unique('items/upsert');
    const getHook = await trigger({
      plan_id: planId,
      type: 'webhook',
      config: { path: getPath, method: 'GET' },
      input_mapping: { q: '{{event.q}}' },
    });
    await trigger({ plan_id: planId, type: 'webhook', config: { path: putPath, method: 'PUT' }, input: { fixed: 1 } });
    const agent = await server.agent(unique('caller'));

    const viaGet = await agent.get(`/api/v1/coordination/hooks/${getPath}?q=weather`);
    expect(viaGet.status, viaGet.text).toBe(202);
    const getRun = (await server.api.get(`${R}/${viaGet.body.data.run_id}`)).body.data;
    expect(getRun).toMatchObject({
      status: 'completed',
      input: { q: 'weather' },
      output: { see: { repo: null, body: null, q: 'weather' } },
    });
    expect(getRun.created_by).toBe(`trigger:${getHook.id}`);

    const viaPut = await agent.put(`/api/v1/coordination/hooks/${putPath}`, ['a', 'b']);
    expect(viaPut.status, viaPut.text).toBe(202);
    const putRun = (await server.api.get(`${R}/${viaPut.body.data.run_id}`)).body.data;
    expect(putRun).toMatchObject({ input: { fixed: 1 }, output: { see: { body: ['a', 'b'] } } });

    for (const method of ['post', 'patch', 'delete'] as const) {
      const wrong = await (method === 'delete'
        ? agent.delete(`/api/v1/coordination/hooks/${getPath}`)
        : agent[method](`/api/v1/coordination/hooks/${getPath}`, {}));
      expect(wrong.status, method).toBe(405);
      expect(wrong.headers.get('allow')).toBe('GET');
    }
    expect((await agent.get(`/api/v1/coordination/hooks/${getPath}/more`)).status).toBe(404);
    expect((await server.api.patch(`${T}/${getHook.id}`, { config: { path: putPath, method: 'GET' } })).status).toBe(409);
    const moved = await server.api.patch(`${T}/${getHook.id}`, { config: { path: `${getPath}-v2`, method: 'GET' } });
    expect(moved.status, moved.text).toBe(200);
    expect((await agent.get(`/api/v1/coordination/hooks/${getPath}`)).status).toBe(404);
    expect((await agent.get(`/api/v1/coordination/hooks/${getPath}-v2`)).status).toBe(202);
  });

  it('keeps the last 100 fires of a trigger when the ledger is pruned', async () => {
    const plan = await echoPlan();
    const path = unique('busy/hook');
    const hook = await trigger({ plan_id: plan, type: 'webhook', config: { path } });
    for (let i = 0; i < 105; i++) expect((await server.api.post(`/api/v1/coordination/hooks/${path}`, { i })).status).toBe(202);
    expect((await server.api.get(`${T}/${hook.id}/fires?limit=1`)).body.meta.total).toBe(105);
    const { db, caps } = server.app.platform.database;
    await new TriggerStore(db, caps).pruneFires(autocommit);
    const kept = await server.api.get(`${T}/${hook.id}/fires?limit=500`);
    expect(kept.body.meta.total).toBe(100);
    // The newest ones stay.
    const runs = await runsOf(plan);
    expect(kept.body.data[0].run_id).toBe(runs[0].id);
  });

  it('a schedule trigger fires each slot once with its fixed input, and pausing stops it', async () => {
    const plan = await echoPlan();
    const every = await trigger({ plan_id: plan, type: 'schedule', config: { cron: '* * * * * *' }, input: { tick: true } });
    expect(every.next_fire_at).not.toBeNull();
    const ledger = await waitFor(async () => {
      const list = await fires(every.id);
      return list.filter((f) => f.outcome === 'started').length >= 2 ? list : null;
    });
    const slots = ledger.map((f) => f.scheduled_for);
    expect(new Set(slots).size).toBe(slots.length);
    await server.api.patch(`${T}/${every.id}`, { enabled: false });
    const stopped = (await fires(every.id)).length;
    const runs = await runsOf(plan);
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(runs[0].input).toEqual({ tick: true });
    expect(stopped).toBeGreaterThanOrEqual(2);
    // That pausing fires nothing more is shown on a clock the test moves (below).
    expect((await server.api.get(`${T}/${every.id}`)).body.data.next_fire_at).toBeNull();
  });
});

describeEachDialect('coordination schedule triggers on a moved clock', (dialect) => {
  const clock = new FakeClock(Date.parse('2026-01-05T00:00:30.000Z'));
  const server = useServer(dialect, { clock });
  const MINUTE = 60_000;

  const fires = async (id: string) => (await server.api.get(`${T}/${id}/fires?limit=100`)).body.data as any[];
  const get = async (id: string) => (await server.api.get(`${T}/${id}`)).body.data;
  async function create(body: Record<string, unknown>) {
    const res = await server.api.post(T, body);
    expect(res.status, res.text).toBe(201);
    return res.body.data;
  }
  /** Moves the clock and wakes the run timer (as a change on any node does); resolves once `done` holds. */
  async function advance(ms: number, done: () => Promise<boolean>) {
    clock.advance(ms);
    await server.app.platform.notifier.notify('coordination:changed');
    await waitFor(done, 10_000);
  }

  it('fires the latest missed slot once (the others are skipped), in the trigger time zone, never while disabled or paused', async () => {
    const plan = (
      await server.api.post(P, {
        alias: 'clocked',
        steps: [{ id: 'slot', type: 'transform', output: { slot: '{{event.scheduled_for}}', tick: '{{input.tick}}' } }],
      })
    ).body.data.id;
    const every = await create({ plan_id: plan, type: 'schedule', config: { cron: '* * * * *' }, input: { tick: 1 } });
    const off = await create({ plan_id: plan, type: 'schedule', config: { cron: '* * * * *' }, enabled: false });
    const paris = await create({ plan_id: plan, type: 'schedule', config: { cron: '30 9 * * *', timezone: 'Europe/Paris' } });
    const newYork = await create({ plan_id: plan, type: 'schedule', config: { cron: '30 9 * * *', timezone: 'America/New_York' } });
    expect(every.next_fire_at).toBe('2026-01-05T00:01:00.000Z');
    expect(off.next_fire_at).toBeNull();
    expect(paris.next_fire_at).toBe('2026-01-05T08:30:00.000Z');
    expect(newYork.next_fire_at).toBe('2026-01-05T14:30:00.000Z');

    // Five slots went by unseen: catch-up `latest` starts one run, for the newest slot.
    await advance(5 * MINUTE, async () => (await fires(every.id)).length === 5);
    const ledger = await fires(every.id);
    // One pass wrote them all (same time): compare in slot order.
    expect(ledger.map((f) => [f.scheduled_for, f.outcome]).sort()).toEqual([
      ['2026-01-05T00:01:00.000Z', 'skipped'],
      ['2026-01-05T00:02:00.000Z', 'skipped'],
      ['2026-01-05T00:03:00.000Z', 'skipped'],
      ['2026-01-05T00:04:00.000Z', 'skipped'],
      ['2026-01-05T00:05:00.000Z', 'started'],
    ]);
    expect(ledger.find((f) => f.outcome === 'skipped').reason).toBeTruthy();
    const run = (await server.api.get(`${R}/${ledger.find((f) => f.outcome === 'started').run_id}`)).body.data;
    expect(run).toMatchObject({ status: 'completed', input: { tick: 1 }, output: { slot: { slot: '2026-01-05T00:05:00.000Z', tick: 1 } } });
    expect(await get(every.id)).toMatchObject({ next_fire_at: '2026-01-05T00:06:00.000Z', last_fired_at: '2026-01-05T00:05:30.000Z' });
    // The same pass saw the disabled and not-yet-due triggers.
    expect(await fires(off.id)).toEqual([]);
    expect(await fires(paris.id)).toEqual([]);

    // Paused: its slots pass without a fire (a witness trigger shows the timer ran).
    await server.api.patch(`${T}/${every.id}`, { enabled: false });
    const witness = await create({ plan_id: plan, type: 'schedule', config: { cron: '* * * * *' } });
    await advance(MINUTE, async () => (await fires(witness.id)).length === 1);
    expect(await fires(every.id)).toHaveLength(5);
    expect((await get(every.id)).next_fire_at).toBeNull();
    expect(await fires(off.id)).toEqual([]);

    // Resumed: from now on, with nothing from the pause caught up.
    const resumed = (await server.api.patch(`${T}/${every.id}`, { enabled: true })).body.data;
    expect(resumed.next_fire_at).toBe('2026-01-05T00:07:00.000Z');
    await advance(MINUTE, async () => (await fires(every.id)).length === 6);
    expect((await fires(every.id))[0]).toMatchObject({ scheduled_for: '2026-01-05T00:07:00.000Z', outcome: 'started' });

    // The day's Paris slot comes at 08:30 UTC (09:30 CET), New York's later.
    for (const id of [every.id, witness.id]) await server.api.patch(`${T}/${id}`, { enabled: false });
    await advance(Date.parse('2026-01-05T08:31:00.000Z') - clock.now(), async () => (await fires(paris.id)).length === 1);
    expect((await fires(paris.id))[0]).toMatchObject({ scheduled_for: '2026-01-05T08:30:00.000Z', outcome: 'started' });
    expect(await fires(newYork.id)).toEqual([]);
    expect((await get(paris.id)).next_fire_at).toBe('2026-01-06T08:30:00.000Z');
  });
});

describeEachDialect('coordination triggers on several nodes', (dialect) => {
  it.runIf(dialect === 'postgres')(
    'two nodes fire each schedule slot once',
    async () => {
      const database = await createTestDatabase(dialect);
      const a = await startServer(dialect, { database });
      const b = await startServer(dialect, { database, adminKey: a.adminKey });
      try {
        const plan = (await a.api.post(P, { alias: 'ticks', steps: [{ id: 't', type: 'transform', output: { ok: true } }] })).body.data.id;
        const created = (await a.api.post(T, { plan_id: plan, type: 'schedule', config: { cron: '* * * * * *' } })).body.data;
        // Both nodes' timers race for every slot; wait until several slots went by.
        await waitFor(async () => {
          const ledger = (await b.api.get(`${T}/${created.id}/fires?limit=500`)).body.data as any[];
          return ledger.filter((f) => f.outcome === 'started').length >= 3;
        }, 20_000);
        await a.api.patch(`${T}/${created.id}`, { enabled: false });
        // Runs first, then the ledger: a fire committed in between only adds to the ledger.
        const runs = (await a.api.get(`${R}?plan_id=${plan}&limit=500`)).body.data as any[];
        const ledger = (await a.api.get(`${T}/${created.id}/fires?limit=500`)).body.data as any[];
        const started = ledger.filter((f) => f.outcome === 'started');
        expect(new Set(ledger.map((f) => f.scheduled_for)).size).toBe(ledger.length);
        expect(new Set(started.map((f) => f.run_id)).size).toBe(started.length);
        const firedRuns = new Set(started.map((f) => f.run_id));
        expect(runs.every((r) => firedRuns.has(r.id))).toBe(true);
        expect(runs.length).toBeGreaterThanOrEqual(3);
        expect(runs.every((r) => r.created_by === `trigger:${created.id}`)).toBe(true);
      } finally {
        await b.close();
        await a.close();
        await database.drop();
      }
    },
    30_000,
  );
});
