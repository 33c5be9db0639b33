import { expect, it } from 'vitest';
import { ROUTINES_CHANGED } from '../../src/routines/service.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const R = '/core/api/v1/routines';

/** Debounced webhook routines: a burst of calls starts one execution, with the last call's body. */
describeEachDialect('routine webhook debounce', (dialect) => {
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock });
  let n = 0;
  async function routine(debounce: Record<string, unknown>) {
    const res = await server.api.post(R, { name: `debounced ${++n}`, trigger_type: 'webhook', target_agent: `deb-${n}`, debounce });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; webhook_token: string; debounce: unknown };
  }
  const call = async (token: string, body: Record<string, unknown>) => {
    const res = await server.api.post(`/core/api/v1/routines/webhook/${token}`, body, { key: null });
    expect(res.status, res.text).toBe(202);
    expect(res.body.data).toEqual({ execution_id: null });
  };
  const executions = async (id: string) => (await server.api.get(`${R}/${id}/executions?limit=100`)).body.data as any[];
  /** Moves the clock and wakes the scheduler (it sleeps by the fake clock until told of a change). */
  async function advance(ms: number) {
    clock.advance(ms);
    await server.app.platform.notifier.notify(ROUTINES_CHANGED);
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

  it('a burst of calls starts one execution per key after the quiet period, with the last call', async () => {
    const { id, webhook_token, debounce } = await routine({ seconds: 10, key: '{{event.customer}}' });
    expect(debounce).toEqual({ seconds: 10, key: '{{event.customer}}' });
    for (let i = 1; i <= 3; i++) {
      await call(webhook_token, { customer: 'a', n: i });
      await advance(3000);
    }
    await call(webhook_token, { customer: 'b', n: 30 });
    await advance(6000);
    await settle();
    expect(await executions(id)).toEqual([]);
    await advance(5000);
    const found = await waitFor(async () => {
      const list = await executions(id);
      return list.length === 2 ? list : null;
    }, 5000);
    expect(found.map((e) => e.payload).sort((x, y) => x.n - y.n)).toEqual([
      { customer: 'a', n: 3 },
      { customer: 'b', n: 30 },
    ]);
    expect(found.every((e) => e.trigger === 'webhook')).toBe(true);
    await advance(20_000);
    await settle();
    expect(await executions(id)).toHaveLength(2);
  });

  it('max_wait_s starts the execution of a burst that never goes quiet', async () => {
    const { id, webhook_token } = await routine({ seconds: 10, max_wait_s: 15 });
    // A call every 4 s: never 10 s of quiet; the last at 8 s would fire at 18 s, the deadline is 15 s.
    for (let i = 1; i <= 3; i++) {
      await call(webhook_token, { n: i });
      await advance(4000);
    }
    await settle();
    expect(await executions(id)).toEqual([]);
    await advance(4000);
    const [first] = await waitFor(async () => {
      const list = await executions(id);
      return list.length === 1 ? list : null;
    }, 5000);
    expect(first.payload).toEqual({ n: 3 });
  });

  it('refuses a debounce on a cron routine and a key that reads past the body; null removes it', async () => {
    const cron = await server.api.post(R, {
      name: 'cron',
      trigger_type: 'cron',
      cron_expression: '0 3 * * *',
      target_agent: 'x',
      debounce: { seconds: 1 },
    });
    expect(cron.status).toBe(400);
    const bad = await server.api.post(R, {
      name: 'k',
      trigger_type: 'webhook',
      target_agent: 'x',
      debounce: { seconds: 1, key: '{{input.a}}' },
    });
    expect(bad.status).toBe(400);
    const { id, webhook_token } = await routine({ seconds: 5 });
    const patched = await server.api.patch(`${R}/${id}`, { debounce: null });
    expect(patched.body.data.debounce).toBeNull();
    const fired = await server.api.post(`/core/api/v1/routines/webhook/${webhook_token}`, {}, { key: null });
    expect(fired.body.data.execution_id).toMatch(/^exe_/);
  });
});
