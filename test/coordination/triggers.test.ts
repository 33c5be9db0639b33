import { expect, it } from 'vitest';
import { CoordinationStore } from '../../src/coordination/store.js';
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
    const res = await server.api.post(P, { alias: unique('echo'), steps: [{ id: 'echo', type: 'transform', output: { got: '{{input}}' } }] });
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
    const created = await trigger({ plan_id: plan, type: 'event', config: { topic: 'orders.*' }, input: { source: 'shop' }, input_mapping: { order: '{{event.id}}' } });
    expect(created).toMatchObject({ plan_id: plan, type: 'event', enabled: true, input: { source: 'shop' }, next_fire_at: null, last_fired_at: null });
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
      if (status === 400) expect(res.body.error.details.map((d: any) => d.field), JSON.stringify(body)).toContain(field);
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
    const big = await trigger({ plan_id: plan, type: 'event', config: { topic: `${topic}.paid`, filter: 'event.amount > 100' }, input_mapping: { big: '{{event.id}}' } });
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
  });

  it('a webhook trigger starts a run from the request body and query; path and method errors', async () => {
    const plan = await echoPlan();
    const path = unique('github/push');
    const hook = await trigger({ plan_id: plan, type: 'webhook', config: { path }, input_mapping: { repo: '{{event.repository}}', ref: '{{event.ref}}' } });
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

  it('keeps the last 100 fires of a trigger when the ledger is pruned', async () => {
    const plan = await echoPlan();
    const path = unique('busy/hook');
    const hook = await trigger({ plan_id: plan, type: 'webhook', config: { path } });
    for (let i = 0; i < 105; i++) expect((await server.api.post(`/api/v1/coordination/hooks/${path}`, { i })).status).toBe(202);
    expect((await server.api.get(`${T}/${hook.id}/fires?limit=1`)).body.meta.total).toBe(105);
    const { db, caps } = server.app.platform.database;
    await new CoordinationStore(db, caps).pruneFires();
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
    await new Promise((r) => setTimeout(r, 1500));
    expect((await fires(every.id)).length).toBe(stopped);
    expect((await server.api.get(`${T}/${every.id}`)).body.data.next_fire_at).toBeNull();
  });
});

describeEachDialect('coordination triggers on several nodes', (dialect) => {
  it.runIf(dialect === 'postgres')('two nodes fire each schedule slot once', async () => {
    const database = await createTestDatabase(dialect);
    const a = await startServer(dialect, { database });
    const b = await startServer(dialect, { database, adminKey: a.adminKey });
    try {
      const plan = (await a.api.post(P, { alias: 'ticks', steps: [{ id: 't', type: 'transform', output: { ok: true } }] })).body.data.id;
      const created = (await a.api.post(T, { plan_id: plan, type: 'schedule', config: { cron: '* * * * * *' } })).body.data;
      await new Promise((r) => setTimeout(r, 3500));
      await a.api.patch(`${T}/${created.id}`, { enabled: false });
      const ledger = (await a.api.get(`${T}/${created.id}/fires`)).body.data as any[];
      const started = ledger.filter((f) => f.outcome === 'started');
      expect(started.length).toBeGreaterThanOrEqual(2);
      expect(new Set(started.map((f) => f.scheduled_for)).size).toBe(started.length);
      const runs = (await a.api.get(`${R}?plan_id=${plan}&limit=500`)).body.data as any[];
      expect(runs.length).toBe(started.length);
    } finally {
      await b.close();
      await a.close();
      await database.drop();
    }
  }, 30_000);
});
