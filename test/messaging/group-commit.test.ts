import { afterEach, expect, it, vi } from 'vitest';
import { Leases } from '../../src/messaging/leases.js';
import { MessagingStore } from '../../src/messaging/store.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';

// The sends and acknowledgements of one turn of the event loop share one statement and one
// transaction (kernel/turn-batch.ts), each keeping its own fate: what fails alone fails alone.
describeEachDialect('messaging: group commit of sends and acknowledgements', (dialect) => {
  const server = useServer(dialect);
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;
  afterEach(() => vi.restoreAllMocks());

  it('inserts a burst of lone sends in shared statements, every one stored once', async () => {
    const inserts = vi.spyOn(MessagingStore.prototype, 'insertMessages');
    // Requests that reach the server in separate turns go alone: a loaded machine can spread one
    // burst that way, so up to five bursts are sent until one shares a statement.
    for (let burst = 0; burst < 5; burst++) {
      inserts.mockClear();
      const destination = unique('burst');
      const sent = await Promise.all(
        Array.from({ length: 100 }, (_, i) => server.api.post(`${M}/send`, { destination, event_name: 'burst', payload: { i } })),
      );
      expect(sent.map((res) => res.status)).toEqual(sent.map(() => 201));
      const sizes = inserts.mock.calls.map(([, rows]) => rows.length);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(100);
      const inbox = await server.api.get(`${M}/inboxes/${destination}/messages?state=pending&limit=200`);
      expect(inbox.status, inbox.text).toBe(200);
      const ids = (inbox.body.data as { message_id: string }[]).map((m) => m.message_id).sort();
      expect(ids).toEqual(sent.map((res) => res.body.data.message_id as string).sort());
      if (Math.max(...sizes) > 1) return;
    }
    expect.fail('no burst of 100 concurrent sends shared an INSERT');
  });

  it('answers each acknowledgement of a burst on its own: refused ones fail, the others are acknowledged', async () => {
    const acks = vi.spyOn(MessagingStore.prototype, 'acknowledgeReceived');
    const agentId = unique('acker');
    const agent = await server.agent(agentId);
    await server.api.post(`${M}/send-batch`, {
      messages: Array.from({ length: 60 }, (_, i) => ({ destination: agentId, event_name: 'job', payload: { i } })),
    });
    const got = await agent.get(`${M}/receive?max=50&timeout=0`);
    const received = (got.body.data.messages as { message_id: string }[]).map((m) => m.message_id);
    expect(received).toHaveLength(50);
    const pending = await agent.get(`${M}/inboxes/${agentId}/messages?state=pending&limit=20`);
    const unreceived = (pending.body.data as { message_id: string }[]).map((m) => m.message_id);
    expect(unreceived).toHaveLength(10);
    // Every fifth call names a message that was never received (409) or does not exist (404).
    const calls = received.map((id, i) => (i % 10 === 4 ? [unreceived[Math.floor(i / 10)]!] : i % 10 === 9 ? [`msg_unknown${i}`] : [id]));
    const answers = await Promise.all(calls.map((ids) => agent.post(`${M}/acknowledge`, { message_ids: ids })));
    const expected = calls.map((_, i) => (i % 10 === 4 ? 409 : i % 10 === 9 ? 404 : 200));
    expect(answers.map((res) => res.status)).toEqual(expected);
    expect(Math.max(...acks.mock.calls.map(([, ids]) => ids.length))).toBeGreaterThan(1);
    // What was acknowledged is gone from the inbox; what was refused is still there, as it was.
    const leased = await agent.get(`${M}/inboxes/${agentId}/messages?state=leased&limit=100`);
    const stillLeased = (leased.body.data as { message_id: string }[]).map((m) => m.message_id).sort();
    expect(stillLeased).toEqual(received.filter((_, i) => i % 10 === 4 || i % 10 === 9).sort());
    const left = await agent.get(`${M}/inboxes/${agentId}/messages?state=pending&limit=20`);
    expect((left.body.data as unknown[]).length).toBe(10);
  });

  it('shares no statement between two acknowledgements of one message: one wins, the other is refused', async () => {
    const agentId = unique('twice');
    const agent = await server.agent(agentId);
    await server.api.post(`${M}/send`, { destination: agentId, event_name: 'once' });
    const [message] = (await agent.get(`${M}/receive?timeout=0`)).body.data.messages as { message_id: string }[];
    const answers = await Promise.all([1, 2, 3].map(() => agent.post(`${M}/acknowledge`, { message_ids: [message!.message_id] })));
    expect(answers.map((res) => res.status).sort()).toEqual([200, 409, 409]);
  });

  it('answers each rejection of a burst on its own, requeued, dead-lettered or refused', async () => {
    const agentId = unique('rejecter');
    const agent = await server.agent(agentId);
    await server.api.post(`${M}/send-batch`, {
      messages: Array.from({ length: 30 }, (_, i) => ({ destination: agentId, event_name: 'job', payload: { i } })),
    });
    const got = await agent.get(`${M}/receive?max=30&timeout=0`);
    const received = (got.body.data.messages as { message_id: string }[]).map((m) => m.message_id);
    expect(received).toHaveLength(30);
    const answers = await Promise.all(
      received.map((id, i) =>
        agent.post(`${M}/reject`, {
          message_id: i % 3 === 2 ? `msg_unknown${i}` : id,
          reason: 'no',
          requeue: i % 3 === 1 ? false : undefined,
          delay_seconds: 60,
        }),
      ),
    );
    expect(answers.map((res) => res.status)).toEqual(received.map((_, i) => (i % 3 === 2 ? 404 : 200)));
    expect(answers.filter((res) => res.status === 200).map((res) => res.body.data.status)).toEqual(
      received.flatMap((_, i) => (i % 3 === 0 ? ['requeued'] : i % 3 === 1 ? ['dead_lettered'] : [])),
    );
    const dead = await agent.get(`${M}/dead-letters?agent_id=${agentId}&limit=50`);
    expect((dead.body.data as unknown[]).length).toBe(10);
  });

  it('settles bursts that span several inboxes without a batch failing (inboxes taken in one order)', async () => {
    const agents = await Promise.all([1, 2, 3, 4].map(async (n) => ({ id: unique(`span-${n}`), n })));
    const clients = await Promise.all(agents.map((a) => server.agent(a.id)));
    const held: Array<{ client: (typeof clients)[number]; id: string }> = [];
    for (const [i, agent] of agents.entries()) {
      await server.api.post(`${M}/send-batch`, {
        messages: Array.from({ length: 40 }, () => ({ destination: agent.id, event_name: 'job' })),
      });
      const got = await clients[i]!.get(`${M}/receive?max=40&timeout=0`);
      for (const m of got.body.data.messages as { message_id: string }[]) held.push({ client: clients[i]!, id: m.message_id });
    }
    // Interleaved: consecutive calls come from different inboxes, in varying order.
    const order = held.map((_, i) => held[(i % 4) * 40 + Math.floor(i / 4)]!).reverse();
    const batches = vi.spyOn(Leases.prototype as unknown as { acknowledgeIn: () => Promise<unknown> }, 'acknowledgeIn');
    // On PostgreSQL acks of one message nobody hears of share one statement instead (acknowledgeUnheard).
    const statements = vi.spyOn(MessagingStore.prototype, 'acknowledgeUnheard');
    const answers = await Promise.all(order.map(({ client, id }) => client.post(`${M}/acknowledge`, { message_ids: [id] })));
    expect(answers.map((res) => res.status)).toEqual(order.map(() => 200));
    const results = [...batches.mock.results, ...statements.mock.results];
    const outcomes = await Promise.allSettled(results.map((r) => r.value as Promise<unknown>));
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    const sizes = [
      ...batches.mock.calls.map((call) => ((call as unknown[])[1] as unknown[]).length),
      ...statements.mock.calls.map(([acks]) => acks.length),
    ];
    expect(Math.max(...sizes)).toBeGreaterThan(1);
  });
});
