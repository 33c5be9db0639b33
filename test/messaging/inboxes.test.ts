import { expect, it } from 'vitest';
import { receive } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';

describeEachDialect('messaging: looking into inboxes', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock });

  const send = async (destination: string, event_name: string, extra: Record<string, unknown> = {}) => {
    const res = await server.api.post(`${M}/send`, { destination, event_name, ...extra });
    expect(res.status, res.text).toBe(201);
    return res.body.data.message_id as string;
  };
  const inbox = async (agentId: string) => {
    const res = await server.api.get(`${M}/inboxes?agent_id=${agentId}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toHaveLength(1);
    return res.body.data[0];
  };
  const peek = async (agentId: string, state: 'pending' | 'leased', query = '') => {
    const res = await server.api.get(`${M}/inboxes/${agentId}/messages?state=${state}${query}`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  };

  it('counts pending, leased and dead messages per inbox, with the age of the oldest pending one', async () => {
    const worker = await server.agent('ibx-worker');
    const first = await send('ibx-worker', 'first');
    clock.advance(1000);
    const second = await send('ibx-worker', 'second');
    const delayed = await send('ibx-worker', 'later', { delay_seconds: 60 });
    clock.advance(4000);
    expect(await inbox('ibx-worker')).toEqual({
      agent_id: 'ibx-worker',
      pending: 3,
      leased: 0,
      dead_letters: 0,
      oldest_pending_at: new Date(clock.now() - 5000).toISOString(),
      oldest_pending_age_seconds: 5,
    });

    // The first is leased, then the second dead-lettered at once: the oldest pending is the delayed one.
    expect((await receive(worker, 'ibx-worker', 0, 1)).map((m) => m.message_id)).toEqual([first]);
    expect((await receive(worker, 'ibx-worker', 0, 1)).map((m) => m.message_id)).toEqual([second]);
    expect((await worker.post(`${M}/reject`, { message_id: second, reason: 'no', requeue: false })).status).toBe(200);
    expect(await inbox('ibx-worker')).toMatchObject({ pending: 1, leased: 1, dead_letters: 1, oldest_pending_age_seconds: 4 });

    const pending = await peek('ibx-worker', 'pending');
    expect(pending.meta).toMatchObject({ total: 1, limit: 50, offset: 0 });
    expect(pending.data).toEqual([
      expect.objectContaining({
        message_id: delayed,
        event_name: 'later',
        status: 'sent',
        visible_at: new Date(clock.now() + 56_000).toISOString(),
        deliveries: 0,
        max_deliveries: 5,
        lease_expires_at: null,
        leased_to: null,
      }),
    ]);
    const leased = await peek('ibx-worker', 'leased');
    expect(leased.data).toEqual([
      expect.objectContaining({
        message_id: first,
        status: 'delivered',
        deliveries: 1,
        lease_expires_at: new Date(clock.now() + 30_000).toISOString(),
        leased_to: 'ibx-worker',
      }),
    ]);
    // Looking leases nothing: the delayed message is still there for the worker when it is due.
    clock.advance(60_000);
    expect((await receive(worker, 'ibx-worker', 0)).map((m) => m.message_id)).toEqual([first, delayed]);
  });

  it('counts a rejected message backing off and a message whose lease ran out as pending, not leased', async () => {
    const worker = await server.agent('ibx-retry');
    const backingOff = await send('ibx-retry', 'flaky');
    const forgotten = await send('ibx-retry', 'slow');
    await receive(worker, 'ibx-retry', 0);
    expect((await peek('ibx-retry', 'leased')).data.map((m: { message_id: string }) => m.message_id)).toEqual([backingOff, forgotten]);
    expect((await worker.post(`${M}/reject`, { message_id: backingOff, reason: 'later', delay_seconds: 600 })).status).toBe(200);
    expect(await inbox('ibx-retry')).toMatchObject({ pending: 1, leased: 1 });
    clock.advance(31_000);
    expect(await inbox('ibx-retry')).toMatchObject({ pending: 2, leased: 0, dead_letters: 0 });
    const pending = await peek('ibx-retry', 'pending');
    expect(pending.data.map((m: { message_id: string; deliveries: number }) => [m.message_id, m.deliveries])).toEqual([
      [backingOff, 1],
      [forgotten, 1],
    ]);
    expect((await peek('ibx-retry', 'leased')).meta.total).toBe(0);
  });

  it('lists inboxes by agent id in pages, and an agent sees only its own', async () => {
    for (const id of ['ibx-page-a', 'ibx-page-b', 'ibx-page-c']) await send(id, 'hello');
    const all = await server.api.get(`${M}/inboxes?limit=500`);
    const ids = all.body.data.map((i: { agent_id: string }) => i.agent_id);
    expect(ids).toEqual([...ids].sort());
    const at = ids.indexOf('ibx-page-a');
    const page = await server.api.get(`${M}/inboxes?limit=2&offset=${at + 1}`);
    expect(page.body.meta).toMatchObject({ total: all.body.meta.total, limit: 2, offset: at + 1 });
    expect(page.body.data.map((i: { agent_id: string }) => i.agent_id)).toEqual(['ibx-page-b', 'ibx-page-c']);

    const agent = await server.agent('ibx-page-b');
    const own = await agent.get(`${M}/inboxes`);
    expect(own.body.data).toEqual([expect.objectContaining({ agent_id: 'ibx-page-b', pending: 1 })]);
    expect(own.body.meta.total).toBe(1);
    expect((await agent.get(`${M}/inboxes?agent_id=ibx-page-a`)).status).toBe(403);
    expect((await agent.get(`${M}/inboxes/ibx-page-a/messages`)).status).toBe(403);
    expect((await agent.get(`${M}/inboxes/ibx-page-b/messages`)).body.data).toHaveLength(1);

    // An agent with nothing in its inbox still has one, empty.
    const idle = await server.agent('ibx-idle');
    expect((await idle.get(`${M}/inboxes`)).body).toMatchObject({
      data: [{ agent_id: 'ibx-idle', pending: 0, leased: 0, dead_letters: 0, oldest_pending_at: null, oldest_pending_age_seconds: null }],
      meta: { total: 1 },
    });
    expect((await server.api.get(`${M}/inboxes?agent_id=ibx-idle&offset=1`)).body).toMatchObject({ data: [], meta: { total: 1 } });
    expect((await server.api.get(`${M}/inboxes/ibx-idle/messages?state=dead`)).status).toBe(400);
  });
});
