import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Api } from '../helpers/api.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { spawnServer, type ServerProcess } from '../helpers/process.js';
import { waitFor, within } from '../helpers/wait.js';

const P = '/api/v1/coordination/plans';
const R = '/api/v1/coordination/runs';
const T = '/api/v1/coordination/triggers';
/** The server's default time budget per expression. */
const BUDGET_MS = 1000;
/**
 * How long /healthz may take while an expression runs (see `responsiveBound`): well under the
 * 1,000 ms budget an unsliced evaluation would hold the loop for; 200 ms failed a quiet CI run at
 * 221 ms on two cores, a scheduling hiccup, not a stall.
 */
const RESPONSIVE_MS = 400;
/** The result budget the server is given (1 MiB by default). */
const RESULT_BYTES = 64 * 1024;
const OVER_BUDGET = /the expression exceeded its (time|memory) budget/;

/**
 * Expressions anyone may write run under a budget, off the event loop. The server is a child
 * process: an expression that held its event loop would hold a test's own loop otherwise, and
 * a process that never answers again can still be killed.
 */
describeEachDialect('expression budgets', (dialect) => {
  const database = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;
  let server: ServerProcess;
  let api: Api;
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  // A process's start takes seconds on a machine the test suites share (19 s seen for `--help`).
  beforeAll(async () => {
    server = await spawnServer(database(), adminKey, { SWITCHBOARD_EXPRESSION_MAX_RESULT_BYTES: String(RESULT_BYTES) });
    api = new Api(server.url, adminKey);
  }, 180_000);
  afterAll(async () => {
    if (server === undefined) return;
    server.child.kill('SIGTERM');
    // A server whose event loop an expression holds cannot hear SIGTERM.
    const exit = await within(server.exited, 10_000, 'exit after SIGTERM').catch(() => {
      server.child.kill('SIGKILL');
      return server.exited;
    });
    expect(exit).toBe(0);
  });

  async function plan(steps: unknown[]): Promise<string> {
    const res = await api.post(P, { alias: unique('plan'), steps });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  }

  /**
   * /healthz's latencies, one request after another, until `work` settles (at most 10 s): each
   * is cut at 2 s, so a server that stopped answering still ends the sampling.
   */
  async function healthWhile(work: Promise<unknown>): Promise<number[]> {
    let settled = false;
    void work.finally(() => (settled = true)).catch(() => undefined);
    const latencies: number[] = [];
    const deadline = Date.now() + 10_000;
    while (!settled && Date.now() < deadline) {
      const t0 = performance.now();
      const ok = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
        (res) => res.ok,
        () => false,
      );
      latencies.push(ok ? performance.now() - t0 : Number.POSITIVE_INFINITY);
      // The probe's pace, not a wait for something (the loop ends when `work` settles).
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return latencies;
  }

  /**
   * RESPONSIVE_MS, or on a machine so loaded that /healthz alone is slower (tests share two cores
   * with other suites), twice its slowest answer over an idle half second; at most 1 s. A server
   * whose event loop an expression holds answers in seconds, or not at all.
   */
  async function responsiveBound(): Promise<number> {
    let idle = false;
    // A real half second of idling: the baseline is /healthz's latency over time.
    const timer = new Promise((resolve) => setTimeout(resolve, 500)).then(() => (idle = true));
    const latencies = await healthWhile(timer.then(() => undefined));
    expect(idle).toBe(true);
    return Math.min(1000, Math.max(RESPONSIVE_MS, 2 * Math.max(...latencies)));
  }

  function expectResponsive(latencies: number[], bound: number): void {
    expect(latencies.length).toBeGreaterThan(0);
    expect(
      Math.max(...latencies),
      `/healthz took ${latencies.map((l) => l.toFixed(1)).join(', ')} ms (bound ${bound.toFixed(0)} ms)`,
    ).toBeLessThan(bound);
  }

  /** Starts a run of `planId` and samples /healthz until the start is answered; the run as answered. */
  async function startWatched(planId: string, input: Record<string, unknown>) {
    const bound = await responsiveBound();
    const started = api.post(R, { plan_id: planId, input });
    const latencies = await healthWhile(started);
    const res = await within(started, 30_000, 'answer to the run start');
    expect(res.status, res.text).toBe(201);
    return { run: res.body.data, latencies, bound };
  }

  it(
    `a transform over budget fails its step with the budget error while /healthz answers within ${RESPONSIVE_MS} ms`,
    { timeout: 60_000 },
    async () => {
      // A range over data is not refused when saved: its size is known only when it runs.
      const heavy = await plan([{ id: 'count', type: 'transform', expression: '$count([1..input.n].$string($))' }]);
      const t0 = performance.now();
      const { run, latencies, bound } = await startWatched(heavy, { n: 10_000_000 });
      // Bounded: the budget, and the start of a fresh process (seconds on a loaded machine).
      expect(performance.now() - t0).toBeLessThan(BUDGET_MS + 15_000);
      expect(run.status).toBe('failed');
      expect(run.steps[0].error).toMatch(OVER_BUDGET);
      expect(run.error).toMatch(OVER_BUDGET);
      expectResponsive(latencies, bound);

      // The pool has replaced the thread it ended: expressions still evaluate.
      const light = await plan([{ id: 'double', type: 'transform', expression: 'input.n * 2' }]);
      const done = await api.post(R, { plan_id: light, input: { n: 21 } });
      expect(done.body.data).toMatchObject({ status: 'completed', output: { double: 42 } });
    },
  );

  it(
    'a nested range (no constant range above the bound, 10^10 numbers in all) fails its condition step likewise',
    { timeout: 60_000 },
    async () => {
      const nested = await plan([
        { id: 'check', type: 'condition', expression: '$count([1..100000].[1..100000]) > 0', then: 'yes' },
        { id: 'yes', type: 'transform', output: { ok: true } },
      ]);
      const { run, latencies, bound } = await startWatched(nested, {});
      expect(run.status).toBe('failed');
      expect(run.steps.find((s: { id: string }) => s.id === 'check').error).toMatch(OVER_BUDGET);
      expectResponsive(latencies, bound);
    },
  );

  it('a transform whose result is larger than the result budget fails its step', { timeout: 60_000 }, async () => {
    // A string of 100 kB, quick to build, above the server's budget of 64 KiB.
    const large = await plan([{ id: 'big', type: 'transform', expression: '$pad("", 100000, "x")' }]);
    const res = await api.post(R, { plan_id: large, input: {} });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data.status).toBe('failed');
    expect(res.body.data.steps[0].error).toMatch(/the expression's result exceeded its size budget \(\d+ bytes, at most 65536\)/);
  });

  it(
    'a heavy trigger filter fails its fire with the budget error and stalls neither /healthz nor other publishes',
    { timeout: 60_000 },
    async () => {
      const target = await plan([{ id: 'echo', type: 'transform', output: { got: '{{input}}' } }]);
      const topic = unique('orders');
      const heavy = await api.post(T, { plan_id: target, type: 'event', config: { topic, filter: '$count([1..event.n].$string($)) > 0' } });
      expect(heavy.status, heavy.text).toBe(201);
      const light = await api.post(T, { plan_id: target, type: 'event', config: { topic: `${topic}.light`, filter: 'event.n > 1' } });
      expect(light.status, light.text).toBe(201);

      const bound = await responsiveBound();
      const publish = api.post('/api/v1/messaging/publish', { topic, payload: { n: 10_000_000 } });
      const latencies = await healthWhile(
        (async () => {
          // While the heavy filter runs, another topic's publish (its filter in the other thread) starts its run at once.
          const t0 = performance.now();
          const other = await api.post('/api/v1/messaging/publish', { topic: `${topic}.light`, payload: { n: 2 } });
          expect(other.status, other.text).toBe(201);
          expect(performance.now() - t0).toBeLessThan(bound);
          await publish;
        })(),
      );
      expect((await within(publish, 30_000, 'answer to the publish')).status).toBe(201);
      expectResponsive(latencies, bound);

      const [fire] = (await api.get(`${T}/${heavy.body.data.id}/fires`)).body.data;
      expect(fire).toMatchObject({ outcome: 'failed', run_id: null });
      expect(fire.reason).toMatch(/^filter failed: /);
      expect(fire.reason).toMatch(OVER_BUDGET);
      const lightFires = await waitFor(async () => {
        const list = (await api.get(`${T}/${light.body.data.id}/fires`)).body.data as { outcome: string }[];
        return list.length > 0 ? list : null;
      });
      expect(lightFires.map((f) => f.outcome)).toEqual(['started']);
    },
  );

  it('refuses a constant range above 100,000 numbers when a plan or a trigger is saved, naming the field', async () => {
    const alias = unique('wide');
    const res = await api.post(P, { alias, steps: [{ id: 'count', type: 'transform', expression: '$count([1..10000000].$string($))' }] });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.details).toContainEqual({ field: 'steps[0].expression', message: expect.stringContaining('[1..10000000]') });
    expect((await api.get(`${P}/${alias}`)).status).toBe(404);

    const inGroup = await api.post(P, {
      alias: unique('wide'),
      steps: [{ id: 'each', type: 'parallel', for_each: [1, 2], step: { type: 'transform', expression: '[0..(100000)]' } }],
    });
    expect(inGroup.status, inGroup.text).toBe(400);
    expect(inGroup.body.error.details.map((d: { field: string }) => d.field)).toContain('steps[0].step.expression');

    const target = await plan([{ id: 'echo', type: 'transform', output: { ok: true } }]);
    const trigger = await api.post(T, {
      plan_id: target,
      type: 'event',
      config: { topic: unique('t'), filter: '$count([1..200000]) > 0' },
    });
    expect(trigger.status, trigger.text).toBe(400);
    expect(trigger.body.error.details.map((d: { field: string }) => d.field)).toContain('config.filter');

    // At the bound, and over data, a range is saved.
    await plan([{ id: 'count', type: 'transform', expression: '$count([1..100000]) + $count([1..input.n])' }]);
  });
});
