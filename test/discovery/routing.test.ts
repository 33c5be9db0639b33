import { expect, it } from 'vitest';
import { acknowledge, receiveOne, reject } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { heartbeat, lookup, namespace, register } from './fixtures.js';

const TTL_S = 30;

interface Spec {
  metadata?: Record<string, unknown>;
  load?: number;
}

describeEachDialect('discovery lookup and routing strategies', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock, env: { SWITCHBOARD_HEALTH_TTL_S: String(TTL_S) } });

  /** Registers agents `${ns}-a`, `${ns}-b`… for one capability, in that order. */
  async function agents<const S extends readonly Spec[]>(ns: string, specs: S): Promise<{ -readonly [K in keyof S]: string }> {
    const ids: string[] = [];
    for (const [i, spec] of specs.entries()) {
      const id = `${ns}-${String.fromCharCode(97 + i)}`;
      await register(server.api, id, `${ns}.work`, spec.metadata ?? {});
      if (spec.load !== undefined) await heartbeat(server.api, id, spec.load);
      ids.push(id);
    }
    return ids as { -readonly [K in keyof S]: string };
  }

  it('returns one entry per agent with load, health and heartbeat, and says which strategy ordered it', async () => {
    const ns = namespace();
    await register(server.api, `${ns}-a`, `${ns}.text.summarize`, { description: 'd' }, ['g1']);
    await register(server.api, `${ns}-a`, `${ns}.text.translate`);
    await register(server.api, `${ns}-b`, `${ns}.text.translate`);
    await heartbeat(server.api, `${ns}-a`, 0.25);
    const { body } = await lookup(server.api, { capability: `${ns}.text.*` });
    expect(body.meta).toMatchObject({ strategy: 'first_available', total: 2 });
    expect(body.meta.request_id).toMatch(/^req_/);
    expect(body.data.agents).toEqual([
      {
        agent_id: `${ns}-a`,
        capability: `${ns}.text.summarize`,
        capability_id: expect.stringMatching(/^cap_/),
        metadata: { description: 'd' },
        groups: ['g1'],
        load: 0.25,
        health: 'healthy',
        last_heartbeat: new Date(clock.now()).toISOString(),
        paused: false,
        observed: { success_ratio: null, latency_ms: null, deliveries: 0, of_capability: false, cost_usd: null, calls: 0 },
      },
      {
        agent_id: `${ns}-b`,
        capability: `${ns}.text.translate`,
        capability_id: expect.stringMatching(/^cap_/),
        metadata: {},
        groups: [],
        load: null,
        health: 'unknown',
        last_heartbeat: null,
        paused: false,
        observed: { success_ratio: null, latency_ms: null, deliveries: 0, of_capability: false, cost_usd: null, calls: 0 },
      },
    ]);
  });

  it('matches a trailing wildcard on whole name segments only', async () => {
    const ns = namespace();
    await register(server.api, `${ns}-a`, `${ns}.text.summarize`);
    await register(server.api, `${ns}-b`, `${ns}.text.deep.translate`);
    await register(server.api, `${ns}-c`, `${ns}.textual.other`);
    await register(server.api, `${ns}-d`, `${ns}.image.resize`);
    expect((await lookup(server.api, { capability: `${ns}.text.*` })).ids).toEqual([`${ns}-a`, `${ns}-b`]);
    expect((await lookup(server.api, { capability: `${ns}.*` })).ids).toEqual([`${ns}-a`, `${ns}-b`, `${ns}-c`, `${ns}-d`]);
    expect((await lookup(server.api, { capability: `${ns}.text` })).ids).toEqual([]);
    expect((await server.api.get(`/api/v1/discovery/agents?capability=${ns}.te*`)).status).toBe(400);
    expect((await server.api.get(`/api/v1/discovery/agents?capability=${ns}.x&strategy=fastest`)).status).toBe(400);
  });

  it('round_robin rotates the first agent on consecutive calls', async () => {
    const ns = namespace();
    const ids = await agents(ns, [{}, {}, {}]);
    const firsts: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { ids: order, body } = await lookup(server.api, { capability: `${ns}.work`, strategy: 'round_robin' });
      expect(body.meta.strategy).toBe('round_robin');
      expect([...order].sort()).toEqual(ids);
      firsts.push(order[0]!);
    }
    expect(firsts).toEqual([ids[0], ids[1], ids[2], ids[0], ids[1], ids[2]]);
    // Each capability (and group) has its own cursor.
    const other = namespace();
    const otherIds = await agents(other, [{}, {}]);
    expect((await lookup(server.api, { capability: `${other}.work`, strategy: 'round_robin' })).ids[0]).toBe(otherIds[0]);
  });

  it('least_loaded orders by the last reported load, agents without one last', async () => {
    const ns = namespace();
    const [a, b, c, d] = await agents(ns, [{ load: 0.5 }, { load: 0.1 }, { load: 0.3 }, {}]);
    const { ids, body } = await lookup(server.api, { capability: `${ns}.work`, strategy: 'least_loaded' });
    expect(ids).toEqual([b, c, a, d]);
    expect(body.data.agents.map((x: { load: number | null }) => x.load)).toEqual([0.1, 0.3, 0.5, null]);
    expect((await lookup(server.api, { capability: `${ns}.work`, strategy: 'least_loaded', limit: 2 })).ids).toEqual([b, c]);
    // An exact name is ordered by the database, a wildcard in memory: both give one order.
    expect((await lookup(server.api, { capability: `${ns}.*`, strategy: 'least_loaded' })).ids).toEqual([b, c, a, d]);
  });

  it('first_available puts healthy agents first in registration order, then degraded, then silent ones', async () => {
    const ns = namespace();
    const [a, b, c, d] = await agents(ns, [{ load: 0.95 }, {}, { load: 0.2 }, { load: 0.89 }]);
    const { ids, body } = await lookup(server.api, { capability: `${ns}.work`, strategy: 'first_available' });
    expect(ids).toEqual([c, d, a, b]);
    expect((await lookup(server.api, { capability: `${ns}.*`, strategy: 'first_available' })).ids).toEqual([c, d, a, b]);
    const limited = await lookup(server.api, { capability: `${ns}.work`, strategy: 'first_available', limit: 2 });
    expect(limited.ids).toEqual([c, d]);
    expect(limited.body.meta.total).toBe(4);
    expect(body.data.agents.map((x: { health: string }) => x.health)).toEqual(['healthy', 'healthy', 'degraded', 'unknown']);
  });

  it('pages with offset in the order of the strategy, across health tiers, with the total and the window in meta', async () => {
    const ns = namespace();
    // Healthy c, busy d and a, silent b, then e gone silent past the TTL.
    const [a, b, c, d, e] = await agents(ns, [{ load: 0.95 }, {}, { load: 0.2 }, { load: 0.89 }, { load: 0.1 }]);
    clock.advance(TTL_S * 1000 + 1);
    for (const id of [a, c, d]) await heartbeat(server.api, id, id === a ? 0.95 : id === c ? 0.2 : 0.89);
    const order = { first_available: [c, d, a, b, e], least_loaded: [c, d, a, b, e] } as const;
    for (const [strategy, expected] of Object.entries(order)) {
      // An exact name is paged by the database, a wildcard in memory: both give the same pages.
      for (const capability of [`${ns}.work`, `${ns}.*`]) {
        const pages: string[][] = [];
        for (let offset = 0; offset < 6; offset += 2) {
          const { ids, body } = await lookup(server.api, { capability, strategy, limit: 2, offset, include_unhealthy: true });
          expect(body.meta, `${strategy} ${capability}`).toMatchObject({ total: 5, limit: 2, offset });
          pages.push(ids);
        }
        expect(pages, `${strategy} ${capability}`).toEqual([expected.slice(0, 2), expected.slice(2, 4), expected.slice(4)]);
      }
    }
    const past = await lookup(server.api, { capability: `${ns}.work`, offset: 10 });
    expect(past.ids).toEqual([]);
    expect(past.body.meta).toMatchObject({ total: 4, limit: 50, offset: 10 });
  });

  it('meta.total counts every matching agent before the limit, whichever tier or group they fall in', async () => {
    const ns = namespace();
    // Silent agents only: the healthy and degraded tiers are empty.
    const silent = await agents(ns, [{}, {}, {}]);
    for (const strategy of ['first_available', 'least_loaded']) {
      const one = await lookup(server.api, { capability: `${ns}.work`, strategy, limit: 1 });
      expect(one.ids, strategy).toEqual([silent[0]]);
      expect(one.body.meta.total, strategy).toBe(3);
    }
    expect((await lookup(server.api, { capability: `${ns}.nothing` })).body.meta.total).toBe(0);

    // A group counts its members only; an agent gone silent past the TTL counts with include_unhealthy only.
    const grouped = namespace();
    for (const [i, groups] of [['g1'], ['g1', 'g2'], ['g2'], ['g1']].entries()) {
      await register(
        server.api,
        `${grouped}-${i}`,
        `${grouped}.work`,
        {},
        groups.map((g) => `${grouped}-${g}`),
      );
      if (i === 0) await heartbeat(server.api, `${grouped}-${i}`, 0.5);
    }
    clock.advance(TTL_S * 1000 + 1);
    await heartbeat(server.api, `${grouped}-1`, 0.95);
    for (const strategy of ['first_available', 'least_loaded']) {
      const query = { capability: `${grouped}.work`, group: `${grouped}-g1`, strategy, limit: 1 };
      const live = await lookup(server.api, query);
      expect(live.ids, strategy).toEqual([`${grouped}-1`]);
      expect(live.body.meta.total, strategy).toBe(2);
      expect((await lookup(server.api, { ...query, include_unhealthy: true })).body.meta.total, strategy).toBe(3);
      // Degraded (or loaded) before silent before unhealthy, under both strategies.
      const all = await lookup(server.api, { ...query, limit: 10, include_unhealthy: true });
      expect(all.ids, strategy).toEqual([`${grouped}-1`, `${grouped}-3`, `${grouped}-0`]);
    }
  });

  it('meta.total follows every change between repeated lookups, on this node and on another sharing the database', async () => {
    const ns = namespace();
    const query = { capability: `${ns}.work`, strategy: 'first_available', limit: 1 };
    const total = async (api = server.api, extra: Record<string, string | boolean> = {}) =>
      (await lookup(api, { ...query, ...extra })).body.meta.total as number;
    const [a] = await agents(ns, [{ load: 0.1 }, { load: 0.2 }]);
    expect(await total()).toBe(2);
    expect(await total()).toBe(2);

    // Registrations and deletions, here and on a second node.
    const other = await startServer(dialect, {
      database: server.database,
      adminKey: server.adminKey,
      clock,
      env: { SWITCHBOARD_HEALTH_TTL_S: String(TTL_S) },
    });
    try {
      expect(await total(other.api)).toBe(2);
      await register(server.api, `${ns}-c`, `${ns}.work`);
      expect(await total(other.api)).toBe(3);
      expect(await total()).toBe(3);
      expect((await other.api.delete(`/api/v1/discovery/agents/${ns}-c`)).status).toBe(200);
      expect(await total()).toBe(2);
      expect(await total(other.api)).toBe(2);
    } finally {
      await other.close();
    }

    // Time turns a counted agent stale; its next heartbeat brings it back.
    clock.advance(TTL_S * 1000 - 1000);
    await heartbeat(server.api, `${ns}-b`, 0.2);
    expect(await total()).toBe(2);
    clock.advance(1001);
    expect(await total()).toBe(1);
    expect(await total(server.api, { include_unhealthy: true })).toBe(2);
    await heartbeat(server.api, a, 0.1);
    expect(await total()).toBe(2);
    expect(await total()).toBe(2);
  });

  it('random puts each agent first about equally often', async () => {
    const ns = namespace();
    const ids = await agents(ns, [{}, {}, {}, {}]);
    const counts = new Map(ids.map((id) => [id, 0]));
    const orders = new Set<string>();
    const rounds = 400;
    for (let i = 0; i < rounds; i++) {
      const { ids: order } = await lookup(server.api, { capability: `${ns}.work`, strategy: 'random' });
      expect([...order].sort()).toEqual(ids);
      counts.set(order[0]!, counts.get(order[0]!)! + 1);
      orders.add(order.join());
    }
    // Binomial(400, 1/4): mean 100, sd 8.7; 50..150 is beyond 5.7 sd either way.
    for (const count of counts.values()) expect(count).toBeGreaterThan(50);
    for (const count of counts.values()) expect(count).toBeLessThan(150);
    expect(orders.size).toBeGreaterThan(10);
  });

  it('weighted puts agents first in proportion to metadata.weight (default 1, 0 never first)', async () => {
    const ns = namespace();
    const [heavy, light, off, plain] = await agents(ns, [
      { metadata: { weight: 6 } },
      { metadata: { weight: 2 } },
      { metadata: { weight: 0 } },
      {},
    ]);
    const counts = new Map<string, number>();
    const rounds = 450;
    for (let i = 0; i < rounds; i++) {
      const { ids: order } = await lookup(server.api, { capability: `${ns}.work`, strategy: 'weighted' });
      expect(order).toHaveLength(4);
      expect(order[3]).toBe(off);
      counts.set(order[0]!, (counts.get(order[0]!) ?? 0) + 1);
    }
    // Shares 6:2:1 of 9 → expected 300, 100, 50 (sd 10, 9.4, 6.7).
    expect(counts.get(heavy)).toBeGreaterThan(250);
    expect(counts.get(heavy)).toBeLessThan(350);
    expect(counts.get(light)).toBeGreaterThan(55);
    expect(counts.get(light)).toBeLessThan(145);
    expect(counts.get(plain)).toBeGreaterThan(20);
    expect(counts.get(plain)).toBeLessThan(85);
    expect(counts.get(off)).toBeUndefined();
  });

  it('latency and trust fall back to the claimed metadata when nothing was measured', async () => {
    const ns = namespace();
    const [a, b, c, d] = await agents(ns, [
      { metadata: { latency_ms: 300, trust_score: 0.5 } },
      { metadata: { latency_ms: 20, trust_score: 0.9 } },
      {},
      { metadata: { latency_ms: 80, trust_score: 0.99 } },
    ]);
    const byLatency = await lookup(server.api, { capability: `${ns}.work`, strategy: 'latency' });
    expect(byLatency.ids).toEqual([b, d, a, c]);
    expect(byLatency.body.meta.strategy).toBe('latency');
    expect(byLatency.body.data.agents.map((x: any) => [x.latency_ms, x.score_source])).toEqual([
      [20, 'metadata'],
      [80, 'metadata'],
      [300, 'metadata'],
      [null, 'none'],
    ]);
    const byTrust = await lookup(server.api, { capability: `${ns}.work`, strategy: 'trust' });
    expect(byTrust.ids).toEqual([d, b, a, c]);
    expect(byTrust.body.data.agents.map((x: any) => x.trust_score)).toEqual([0.99, 0.9, 0.5, null]);
  });

  it('latency and trust use what messaging measured over what agents claim', async () => {
    const ns = namespace();
    // The boasters claim to be fast and reliable; the platform sees otherwise.
    const [boaster, modest] = await agents(ns, [
      { metadata: { latency_ms: 5, trust_score: 0.99 } },
      { metadata: { latency_ms: 900, trust_score: 0.1 } },
    ]);
    const work = async (agentId: string, holdMs: number, outcome: 'ack' | 'dead') => {
      const sent = await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'job', payload: {} });
      expect(sent.status, sent.text).toBe(201);
      const message = await receiveOne(server.api, agentId);
      clock.advance(holdMs);
      if (outcome === 'ack') await acknowledge(server.api, message.message_id);
      else await reject(server.api, message.message_id, 'cannot do it', false);
    };
    await work(boaster, 700, 'ack');
    await work(boaster, 10, 'dead');
    await work(boaster, 10, 'dead');
    await work(modest, 40, 'ack');
    await work(modest, 60, 'ack');

    const byLatency = await lookup(server.api, { capability: `${ns}.work`, strategy: 'latency' });
    expect(byLatency.ids).toEqual([modest, boaster]);
    expect(byLatency.body.data.agents.map((x: any) => x.score_source)).toEqual(['measured', 'measured']);
    expect(byLatency.body.data.agents[1].latency_ms).toBe(700);
    const byTrust = await lookup(server.api, { capability: `${ns}.work`, strategy: 'trust' });
    expect(byTrust.ids).toEqual([modest, boaster]);
    expect(byTrust.body.data.agents.map((x: any) => x.trust_score)).toEqual([1, 1 / 3]);
  });

  it('latency and trust read an agent per capability: its steps of the looked-up capability, else all its messages', async () => {
    const ns = namespace();
    // One agent offers two capabilities: it does `fast` work well and quickly, `slow` work badly.
    const agent = `${ns}-both`;
    await register(server.api, agent, `${ns}.fast`);
    await register(server.api, agent, `${ns}.slow`);
    await register(server.api, agent, `${ns}.never`);
    let plans = 0;
    const step = async (capability: string, holdMs: number, outcome: 'ack' | 'dead') => {
      const plan = await server.api.post('/api/v1/coordination/plans', {
        alias: `${ns}-plan-${++plans}`,
        steps: [{ id: 'work', type: 'agent', capability: `${ns}.${capability}`, retry: { max_attempts: 1 } }],
      });
      expect(plan.status, plan.text).toBe(201);
      const run = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: {} });
      expect(run.status, run.text).toBe(201);
      const message = await receiveOne(server.api, agent);
      clock.advance(holdMs);
      if (outcome === 'ack') await acknowledge(server.api, message.message_id, {});
      else await reject(server.api, message.message_id, 'cannot do it', false);
    };
    await step('fast', 20, 'ack');
    await step('fast', 40, 'ack');
    await step('slow', 900, 'ack');
    await step('slow', 10, 'dead');
    await step('slow', 10, 'dead');
    const observedFor = async (capability: string) =>
      (await lookup(server.api, { capability: `${ns}.${capability}`, strategy: 'trust' })).body.data.agents[0].observed;
    expect(await observedFor('fast')).toMatchObject({ success_ratio: 1, latency_ms: 40, deliveries: 2, of_capability: true });
    expect(await observedFor('slow')).toMatchObject({ success_ratio: 1 / 3, latency_ms: 900, deliveries: 3, of_capability: true });
    // A capability it never served a step of: every message it settled.
    expect(await observedFor('never')).toMatchObject({ success_ratio: 3 / 5, latency_ms: 40, deliveries: 5, of_capability: false });
  });

  it('cost orders by the mean cost per call agents reported (for the capability when a step of it reported), else by their claim', async () => {
    const ns = namespace();
    const [a, b, c, d] = await agents(ns, [{}, {}, {}, { metadata: { cost_usd: 0.3 } }]);
    const spend = async (agentId: string, cost_usd: number) => {
      const res = await server.api.post('/api/v1/usage', { agent_id: agentId, model: 'm', input_tokens: 10, output_tokens: 5, cost_usd });
      expect(res.status, res.text).toBe(201);
    };
    await spend(a, 0.4);
    await spend(a, 0.6);
    await spend(b, 0.1);
    const byCost = await lookup(server.api, { capability: `${ns}.work`, strategy: 'cost' });
    expect(byCost.ids).toEqual([b, d, a, c]);
    expect(byCost.body.meta.strategy).toBe('cost');
    expect(byCost.body.data.agents.map((x: any) => [x.cost_usd, x.score_source])).toEqual([
      [0.1, 'measured'],
      [0.3, 'metadata'],
      [0.5, 'measured'],
      [null, 'none'],
    ]);

    // A step routed by cost goes to b, whose work for this capability turns out dear: b now ranks by that.
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `${ns}-plan`,
      steps: [{ id: 'work', type: 'agent', capability: `${ns}.work`, strategy: 'cost' }],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: {} });
    expect(run.status, run.text).toBe(201);
    const step = await receiveOne(server.api, b);
    const acked = await server.api.post('/api/v1/messaging/acknowledge', {
      message_id: step.message_id,
      output: {},
      usage: { model: 'm', input_tokens: 100, output_tokens: 50, cost_usd: 0.9 },
    });
    expect(acked.status, acked.text).toBe(200);
    const after = await lookup(server.api, { capability: `${ns}.work`, strategy: 'cost' });
    expect(after.ids).toEqual([d, a, b, c]);
    expect(after.body.data.agents[2].cost_usd).toBeCloseTo(0.9);
    // Every HTTP lookup, whatever its strategy, says what the platform saw of each agent.
    const seen = await lookup(server.api, { capability: `${ns}.work` });
    const observed = Object.fromEntries(seen.body.data.agents.map((x: any) => [x.agent_id, x.observed]));
    expect(observed[b]).toMatchObject({ success_ratio: 1, deliveries: 1, of_capability: true, calls: 1 });
    expect(observed[b].cost_usd).toBeCloseTo(0.9);
    expect(observed[a]).toEqual({ success_ratio: null, latency_ms: null, deliveries: 0, of_capability: false, cost_usd: 0.5, calls: 2 });
    expect(observed[c]).toEqual({ success_ratio: null, latency_ms: null, deliveries: 0, of_capability: false, cost_usd: null, calls: 0 });
    // Eight days on, nothing measured is recent: claims only.
    clock.advance(8 * 86_400_000);
    for (const id of [a, b, c, d]) await heartbeat(server.api, id, 0);
    const later = await lookup(server.api, { capability: `${ns}.work`, strategy: 'cost' });
    expect(later.body.data.agents.map((x: any) => [x.agent_id, x.score_source])).toEqual([
      [d, 'metadata'],
      [a, 'none'],
      [b, 'none'],
      [c, 'none'],
    ]);
  });

  it('skips unhealthy agents unless include_unhealthy=true, and turns silent agents unhealthy after the TTL', async () => {
    const ns = namespace();
    const [a, b, c] = await agents(ns, [{ load: 0.1 }, { load: 0.2 }, {}]);
    const health = async (id: string) => (await server.api.get(`/api/v1/discovery/agents/${id}/health`)).body.data;
    expect((await health(a)).status).toBe('healthy');

    // Exactly at the TTL the agent still counts as alive; one millisecond later it does not.
    clock.advance(TTL_S * 1000);
    await heartbeat(server.api, b, 0.2);
    expect((await health(a)).status).toBe('healthy');
    clock.advance(1);
    expect((await health(a)).status).toBe('unhealthy');
    expect((await health(b)).status).toBe('healthy');
    expect((await health(c)).status).toBe('unknown');

    expect((await lookup(server.api, { capability: `${ns}.work`, strategy: 'first_available' })).ids).toEqual([b, c]);
    const all = await lookup(server.api, { capability: `${ns}.work`, strategy: 'first_available', include_unhealthy: true });
    expect(all.ids).toEqual([b, c, a]);
    expect(all.body.data.agents.map((x: { health: string }) => x.health)).toEqual(['healthy', 'unknown', 'unhealthy']);
    expect(all.body.meta.total).toBe(3);
    for (const capability of [`${ns}.work`, `${ns}.*`]) {
      expect((await lookup(server.api, { capability, strategy: 'least_loaded', include_unhealthy: true })).ids).toEqual([b, c, a]);
      expect((await lookup(server.api, { capability, strategy: 'first_available', include_unhealthy: true })).ids).toEqual([b, c, a]);
    }
    // Every strategy skips it.
    for (const strategy of ['round_robin', 'least_loaded', 'random', 'weighted', 'latency', 'trust']) {
      expect((await lookup(server.api, { capability: `${ns}.work`, strategy })).ids.sort()).toEqual([b, c]);
    }
    // A new heartbeat brings it back.
    await heartbeat(server.api, a, 0.1);
    expect((await lookup(server.api, { capability: `${ns}.work`, strategy: 'least_loaded' })).ids).toEqual([a, b, c]);
  });
});

describeEachDialect('discovery round-robin cursor', (dialect) => {
  const suiteDatabase = useTestDatabase(dialect);

  it('keeps rotating across a server restart', async () => {
    const query = { capability: 'rr.work', strategy: 'round_robin' };
    let server = await startServer(dialect, { database: suiteDatabase() });
    for (const id of ['rr-a', 'rr-b', 'rr-c']) await register(server.api, id, 'rr.work');
    const firsts: string[] = [];
    try {
      for (let i = 0; i < 2; i++) firsts.push((await lookup(server.api, query)).ids[0]!);
    } finally {
      await server.close();
    }
    server = await startServer(dialect, { database: suiteDatabase(), adminKey: server.adminKey });
    try {
      for (let i = 0; i < 2; i++) firsts.push((await lookup(server.api, query)).ids[0]!);
    } finally {
      await server.close();
    }
    expect(firsts).toEqual(['rr-a', 'rr-b', 'rr-c', 'rr-a']);
  });
});
