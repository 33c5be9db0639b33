import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { waitFor } from '../helpers/wait.js';
import { R, useCoordination } from './fixture.js';

const T = '/api/v1/coordination/triggers';

/** Debounced event and webhook triggers: a burst starts one run, with the last event's input. */
describeEachDialect('coordination trigger debounce', (dialect) => {
  const { server, unique, plan } = useCoordination(dialect);
  const echoPlan = () => plan({ steps: [{ id: 'echo', type: 'transform', output: { got: '{{input}}' } }] });
  const runsOf = async (planId: string) => (await server.api.get(`${R}?plan_id=${planId}&limit=100`)).body.data as any[];
  async function trigger(body: Record<string, unknown>) {
    const res = await server.api.post(T, body);
    expect(res.status, res.text).toBe(201);
    return res.body.data;
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('a burst of events starts one run after the quiet period, per key, with the last event', async () => {
    const planId = await echoPlan();
    const topic = unique('burst');
    await trigger({
      plan_id: planId,
      type: 'event',
      config: { topic, debounce: { seconds: 1, key: '{{event.customer}}' } },
      input_mapping: { n: '{{event.n}}', customer: '{{event.customer}}' },
    });
    const publisher = await server.agent(unique('pub'));
    for (let n = 1; n <= 5; n++) {
      await publisher.post('/api/v1/messaging/publish', { topic, payload: { n, customer: 'a' } });
      if (n === 3) await publisher.post('/api/v1/messaging/publish', { topic, payload: { n: 30, customer: 'b' } });
    }
    expect(await runsOf(planId)).toEqual([]);
    const runs = await waitFor(async () => {
      const found = await runsOf(planId);
      return found.length === 2 ? found : null;
    }, 10_000);
    const inputs = runs.map((r) => r.input).sort((x, y) => x.n - y.n);
    expect(inputs).toEqual([
      { n: 5, customer: 'a' },
      { n: 30, customer: 'b' },
    ]);
    await sleep(1200);
    expect(await runsOf(planId)).toHaveLength(2);
  });

  it('max_wait_s starts the run of a burst that never goes quiet', async () => {
    const planId = await echoPlan();
    const topic = unique('steady');
    await trigger({
      plan_id: planId,
      type: 'event',
      config: { topic, debounce: { seconds: 2, max_wait_s: 1 } },
      input_mapping: { n: '{{event.n}}' },
    });
    const publisher = await server.agent(unique('pub'));
    const began = Date.now();
    let n = 0;
    // An event every 200 ms for 2.5 s: never 2 s of quiet.
    while (Date.now() - began < 2500) {
      await publisher.post('/api/v1/messaging/publish', { topic, payload: { n: ++n } });
      await sleep(200);
    }
    const runs = await runsOf(planId);
    expect(runs.length).toBeGreaterThanOrEqual(1);
    const first = runs.sort((x, y) => Date.parse(x.started_at) - Date.parse(y.started_at))[0];
    expect(Date.parse(first.started_at) - began).toBeLessThan(2000);
  });

  it('a debounced webhook answers run_id null and starts one run with the last call', async () => {
    const planId = await echoPlan();
    const path = unique('hooks/debounced');
    await trigger({ plan_id: planId, type: 'webhook', config: { path, debounce: { seconds: 1 } }, input_mapping: { v: '{{event.v}}' } });
    for (const v of ['x', 'y', 'z']) {
      const res = await server.api.post(`/api/v1/coordination/hooks/${path}`, { v });
      expect(res.status, res.text).toBe(202);
      expect(res.body.data).toEqual({ run_id: null });
    }
    const runs = await waitFor(async () => {
      const found = await runsOf(planId);
      return found.length === 1 ? found : null;
    }, 10_000);
    expect(runs[0].input).toEqual({ v: 'z' });
    const listed = (await server.api.get(`${T}?plan_id=${planId}`)).body.data;
    expect(listed[0].config.debounce).toEqual({ seconds: 1 });
  });

  it('refuses a debounce on a schedule trigger and a key that reads past the event', async () => {
    const planId = await echoPlan();
    for (const [type, config] of [
      ['schedule', { cron: '* * * * *', debounce: { seconds: 1 } }],
      ['event', { topic: 'x', debounce: { seconds: 1, key: '{{input.a}}' } }],
      ['event', { topic: 'x', debounce: { seconds: 0 } }],
    ] as const) {
      const res = await server.api.post(T, { plan_id: planId, type, config });
      expect(res.status, JSON.stringify(config)).toBe(400);
    }
  });
});
