import { expect, it } from 'vitest';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const P = '/api/v1/alerts/rules/preview';
const MIN = 60_000;

describeEachDialect('alert rule preview', (dialect) => {
  const clock = new FakeClock(Date.parse('2026-03-01T12:00:00.000Z'));
  const server = useServer(dialect, { clock });

  async function preview(condition: Record<string, unknown>) {
    const res = await server.api.post(P, { condition });
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  }

  it('event_count: the count now, and 12 windows ending every 5 minutes over the last hour', async () => {
    const task = async () => expect((await server.api.post('/core/api/v1/tasks', { title: 'previewed' })).status).toBe(201);
    const start = clock.now();
    await task();
    clock.advance(30 * MIN);
    await task();
    await task();
    clock.advance(25 * MIN);
    const condition = { type: 'event_count', event_type: 'task.created', window_s: 600, threshold: 2 };
    const answer = await preview(condition);
    expect(answer).toMatchObject({
      holds: false,
      value: 0,
      detail: null,
      covers: 'last_hour',
      measured_at: new Date(clock.now()).toISOString(),
    });
    expect(answer.summary).toMatch(/0 task.created events in the last 600 s/);
    // Each window counts the 10 minutes up to its end: the first task in the first three, the next two in windows 7 to 9.
    expect(answer.history.map((w: { at: string }) => w.at)).toEqual(
      Array.from({ length: 12 }, (_, i) => new Date(start + i * 5 * MIN).toISOString()),
    );
    expect(answer.history.map((w: { value: number }) => w.value)).toEqual([1, 1, 1, 0, 0, 0, 2, 2, 2, 0, 0, 0]);
    expect(answer.history.map((w: { holds: boolean }) => w.holds)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      true,
      true,
      true,
      false,
      false,
      false,
    ]);

    await task();
    await task();
    expect(await preview(condition)).toMatchObject({ holds: true, value: 2 });
    expect((await preview({ ...condition, event_type: 'task.*', window_s: 3600 })).history.at(-1).value).toBeGreaterThanOrEqual(5);
  });

  it('other conditions: their current measure only, said by `covers`, holding or not', async () => {
    const worker = await server.agent('preview-busy');
    const condition = { type: 'inbox_depth', agent_id: 'preview-busy', threshold: 2 };
    expect(await preview(condition)).toMatchObject({ holds: false, value: 0, detail: null, covers: 'now', history: null });
    for (let i = 0; i < 3; i++) {
      expect((await worker.post('/api/v1/messaging/send', { destination: 'preview-busy', event_name: 'job' })).status).toBe(201);
    }
    const answer = await preview(condition);
    expect(answer).toMatchObject({ holds: true, value: 3, detail: 'preview-busy', covers: 'now', history: null });
    expect(answer.summary).toMatch(/3 messages waiting in the inbox of preview-busy/);
    expect(await preview({ type: 'routine_failures', threshold: 1 })).toMatchObject({
      holds: false,
      value: 0,
      covers: 'now',
      summary: 'No routine is failing (threshold 1)',
    });
  });

  it('validation and permissions: the rules’ conditions, webhooks:admin', async () => {
    for (const [condition, message] of [
      [{ type: 'event_count', event_type: 'nope.*', window_s: 60, threshold: 1 }, /event_type/],
      [{ type: 'budget', limit: 1 }, /condition/],
      [{ type: 'agent_unhealthy', agent_id: 'a', capability: 'b', for_s: 1 }, /not both/],
    ] as const) {
      const res = await server.api.post(P, { condition });
      expect(res.status, JSON.stringify(condition)).toBe(400);
      expect(res.text).toMatch(message);
    }
    expect((await server.api.post(P, {})).status).toBe(400);
    const viewer = await server.api.post('/api/v1/auth/keys', { name: 'preview-viewer', role: 'viewer' });
    expect(viewer.status, viewer.text).toBe(201);
    const condition = { type: 'dead_letters', threshold: 1 };
    expect((await server.api.withKey(viewer.body.data.key).post(P, { condition })).status).toBe(403);
    expect((await (await server.agent('preview-nosy')).post(P, { condition })).status).toBe(403);
  });
});
