import { expect, it } from 'vitest';
import { acknowledge, receive, receiveOne, reject, type InboxMessage } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor, within } from '../helpers/wait.js';

const M = '/api/v1/messaging';

describeEachDialect('messaging: send, receive, acknowledge', (dialect) => {
  const server = useServer(dialect);

  it('sends as the caller and delivers FIFO with the spec fields', async () => {
    const alice = await server.agent('alice');
    const bob = await server.agent('bob');
    const sent = [];
    for (let i = 0; i < 3; i++) {
      const res = await alice.post(`${M}/send`, { destination: 'bob', event_name: 'greet', payload: { i } });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ status: 'sent' });
      expect(res.body.data.message_id).toMatch(/^msg_/);
      sent.push(res.body.data.message_id);
    }
    const messages = await receive(bob, 'bob', 0, 10);
    expect(messages.map((m) => m.message_id)).toEqual(sent);
    expect(messages[0]).toMatchObject({
      source: 'alice',
      destination: 'bob',
      event_name: 'greet',
      payload: { i: 0 },
      retry_count: 0,
      thread_id: null,
    });
    const ack = await bob.post(`${M}/acknowledge`, { message_ids: sent });
    expect(ack.status).toBe(200);
    expect(ack.body.data.acknowledged).toEqual(sent);
    expect(await receive(bob, 'bob', 0)).toEqual([]);
  });

  // The wake-up latency itself is a benchmark figure (bench/messaging.ts); here it is enough that
  // the send ends the wait long before its 10 s timeout, which only a notification can do.
  it('wakes a waiting long poll when a message is sent', async () => {
    const sender = await server.agent('waker');
    const sleeper = await server.agent('sleeper');
    const polling = server.requestArrival('GET', `${M}/receive?agent_id=sleeper&`);
    const waiting = (async () => {
      const messages = await receive(sleeper, 'sleeper', 10);
      return { messages, at: Date.now() };
    })();
    // The handler registers the poll's waiter before its first look, in the turn it starts.
    await polling;
    const sentAt = Date.now();
    await sender.post(`${M}/send`, { destination: 'sleeper', event_name: 'ping' });
    const { messages, at } = await waiting;
    expect(messages).toHaveLength(1);
    expect(at - sentAt).toBeLessThan(2000);
  });

  it('ends the wait of a long poll whose client went away, so it leases nothing it cannot deliver', async () => {
    const sender = await server.agent('leaver-sender');
    const leaver = await server.agent('leaver');
    const gone = new AbortController();
    const polling = server.requestArrival('GET', `${M}/receive?agent_id=leaver&`);
    const abandoned = fetch(`${leaver.baseUrl}${M}/receive?agent_id=leaver&timeout=30`, {
      headers: { authorization: `Bearer ${leaver.key}` },
      signal: gone.signal,
    }).catch((err: Error) => err.name);
    const poll = await polling;
    gone.abort();
    expect(await abandoned).toBe('AbortError');
    // Well before the poll's own 30 s timeout: only the client's going away can end it this soon.
    await within(poll.answered, 5000, 'end of the abandoned poll');
    await sender.post(`${M}/send`, { destination: 'leaver', event_name: 'after' });
    // Had the abandoned poll still been waiting, the send would have woken it and leased the message to nobody.
    expect((await receive(leaver, 'leaver', 0)).map((m: { event_name: string }) => m.event_name)).toEqual(['after']);
  });

  it('answers a waiting long poll at once when the server shuts down', async () => {
    const own = await startServer(dialect);
    const sleeper = await own.agent('shutdown-sleeper');
    const polling = own.requestArrival('GET', `${M}/receive?agent_id=shutdown-sleeper&`);
    const waiting = receive(sleeper, 'shutdown-sleeper', 20);
    await polling;
    const closing = Date.now();
    await own.close();
    expect(await waiting).toEqual([]);
    // A close that waited for the poll's 20 s timeout would take that long.
    expect(Date.now() - closing).toBeLessThan(5000);
  });

  it('returns an empty list when a long poll times out', async () => {
    const idle = await server.agent('idle');
    const started = Date.now();
    expect(await receive(idle, 'idle', 1)).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('never gives one leased message to two concurrent receivers', async () => {
    const producer = await server.agent('producer');
    const worker = await server.agent('busy');
    const ids = new Set<string>();
    for (let i = 0; i < 40; i++) {
      ids.add((await producer.post(`${M}/send`, { destination: 'busy', event_name: 'job', payload: { i } })).body.data.message_id);
    }
    const batches = await Promise.all(Array.from({ length: 6 }, () => receive(worker, 'busy', 0, 10)));
    const got = batches.flat().map((m) => m.message_id);
    expect(new Set(got).size).toBe(got.length);
    for (const id of got) expect(ids.has(id)).toBe(true);
    // Drain the rest, still without duplicates.
    const rest = await receive(worker, 'busy', 0, 100);
    const all = [...got, ...rest.map((m) => m.message_id)];
    expect(new Set(all).size).toBe(40);
  });

  it('redelivers to a waiting long poll when the lease expires, with retry_count + 1', async () => {
    const producer = await server.agent('lease-producer');
    const worker = await server.agent('lease-worker');
    const sent = (await producer.post(`${M}/send`, { destination: 'lease-worker', event_name: 'slow' })).body.data.message_id;
    const first = await worker.get(`${M}/receive?agent_id=lease-worker&visibility_timeout=1`);
    expect(first.body.data.messages[0].message_id).toBe(sent);
    expect(await receive(worker, 'lease-worker', 0)).toEqual([]);
    const again = await receiveOne(worker, 'lease-worker', 5);
    expect(again).toMatchObject({ message_id: sent, retry_count: 1 });
    await acknowledge(worker, sent, { done: true });
  });

  it('answers 404, 403 and 409 for unknown, foreign and settled messages', async () => {
    const a = await server.agent('owner-a');
    const b = await server.agent('owner-b');
    expect((await a.post(`${M}/acknowledge`, { message_id: 'msg_nope' })).status).toBe(404);
    const sent = (await a.post(`${M}/send`, { destination: 'owner-b', event_name: 'x' })).body.data.message_id;
    expect((await b.post(`${M}/acknowledge`, { message_id: sent })).status).toBe(409); // not received yet
    await receive(b, 'owner-b', 0);
    expect((await a.post(`${M}/acknowledge`, { message_id: sent })).status).toBe(403);
    expect((await a.post(`${M}/reject`, { message_id: sent, reason: 'mine now' })).status).toBe(403);
    expect((await a.get(`${M}/receive?agent_id=owner-b`)).status).toBe(403);
    await acknowledge(b, sent);
    const twice = await b.post(`${M}/acknowledge`, { message_id: sent });
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('conflict');
  });

  it('rejects with backoff, dead-letters past max_deliveries with every attempt, and redrives', async () => {
    const producer = await server.agent('dl-producer');
    const worker = await server.agent('dl-worker');
    const sent = (await producer.post(`${M}/send`, { destination: 'dl-worker', event_name: 'flaky', max_deliveries: 3 })).body.data
      .message_id;
    for (let attempt = 0; attempt < 3; attempt++) {
      const message = await receiveOne(worker, 'dl-worker', 10);
      expect(message).toMatchObject({ message_id: sent, retry_count: attempt });
      const res = await worker.post(`${M}/reject`, { message_id: sent, reason: `boom ${attempt}`, delay_seconds: 0 });
      expect(res.body.data.status).toBe(attempt < 2 ? 'requeued' : 'dead_lettered');
    }
    expect(await receive(worker, 'dl-worker', 0)).toEqual([]);
    const dead = await worker.get(`${M}/dead-letters`);
    expect(dead.body.meta.total).toBe(1);
    expect(dead.body.data[0]).toMatchObject({ message_id: sent, status: 'dead' });
    expect(dead.body.data[0].reason).toContain('boom 2');
    expect(
      dead.body.data[0].attempts.map((a: { attempt: number; outcome: string; reason: string; receiver: string }) => [
        a.attempt,
        a.outcome,
        a.reason,
        a.receiver,
      ]),
    ).toEqual([
      [1, 'rejected', 'boom 0', 'dl-worker'],
      [2, 'rejected', 'boom 1', 'dl-worker'],
      [3, 'rejected', 'boom 2', 'dl-worker'],
    ]);
    const redriven = await worker.post(`${M}/dead-letters/${sent}/redrive`);
    expect(redriven.status).toBe(201);
    expect(redriven.body.data).toMatchObject({ redriven_from: sent, retry_count: 0 });
    const back = await receiveOne(worker, 'dl-worker');
    expect(back.message_id).toBe(redriven.body.data.message_id);
    expect((await worker.get(`${M}/dead-letters`)).body.meta.total).toBe(0);
    expect((await worker.post(`${M}/dead-letters/${sent}/redrive`)).status).toBe(409);
  });

  it('dead-letters a message whose last lease runs out unacked (the reaper)', async () => {
    const producer = await server.agent('lx-producer');
    const worker = await server.agent('lx-worker');
    const sent = (await producer.post(`${M}/send`, { destination: 'lx-worker', event_name: 'slow', max_deliveries: 1 })).body.data
      .message_id;
    const res = await worker.get(`${M}/receive?agent_id=lx-worker&visibility_timeout=1`);
    expect(res.body.data.messages.map((m: { message_id: string }) => m.message_id)).toEqual([sent]);
    const dead = await waitFor(async () => (await worker.get(`${M}/dead-letters?agent_id=lx-worker`)).body.data[0], 5000, 50);
    expect(dead).toMatchObject({ message_id: sent, status: 'dead', reason: 'visibility timeout expired after 1 deliveries' });
    expect(dead.attempts.map((a: { attempt: number; outcome: string }) => [a.attempt, a.outcome])).toEqual([[1, 'expired']]);
  });

  it('ends the expired attempt of each message redelivered to several inboxes at once (claims of one turn share a statement)', async () => {
    const producer = await server.agent('rx-producer');
    const workers = await Promise.all(['rx-a', 'rx-b', 'rx-c'].map(async (id) => ({ id, client: await server.agent(id) })));
    const sent = new Map<string, string>();
    for (const { id, client } of workers) {
      sent.set(id, (await producer.post(`${M}/send`, { destination: id, event_name: 'slow', max_deliveries: 2 })).body.data.message_id);
      expect((await client.get(`${M}/receive?visibility_timeout=1`)).body.data.messages).toHaveLength(1);
    }
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await Promise.all(workers.map(({ client }) => client.get(`${M}/receive?timeout=0`)));
    expect(again.map((res) => res.body.data.messages.map((m: { message_id: string }) => m.message_id))).toEqual(
      workers.map(({ id }) => [sent.get(id)]),
    );
    for (const { id, client } of workers) {
      expect((await client.post(`${M}/reject`, { message_id: sent.get(id), reason: 'no', requeue: false })).status).toBe(200);
      const dead = (await client.get(`${M}/dead-letters?agent_id=${id}`)).body.data[0];
      expect(dead.attempts.map((a: { attempt: number; outcome: string }) => [a.attempt, a.outcome])).toEqual([
        [1, 'expired'],
        [2, 'rejected'],
      ]);
    }
  });

  it('backs off exponentially by default and dead-letters at once with requeue=false', async () => {
    const producer = await server.agent('bo-producer');
    const worker = await server.agent('bo-worker');
    const first = (await producer.post(`${M}/send`, { destination: 'bo-worker', event_name: 'x' })).body.data.message_id;
    await receive(worker, 'bo-worker', 0);
    const rejected = await worker.post(`${M}/reject`, { message_id: first, reason: 'later' });
    const retryIn = Date.parse(rejected.body.data.retry_at) - Date.now();
    expect(retryIn).toBeGreaterThan(500);
    expect(retryIn).toBeLessThanOrEqual(1000);
    expect(await receive(worker, 'bo-worker', 0)).toEqual([]);
    const again = await receiveOne(worker, 'bo-worker', 5);
    expect(again.retry_count).toBe(1);
    await reject(worker, first, 'give up', false);
    const dead = await worker.get(`${M}/dead-letters?agent_id=bo-worker`);
    expect(dead.body.data[0]).toMatchObject({ message_id: first, reason: 'give up' });
  });

  it('returns the original message for a repeated idempotency key', async () => {
    const sender = await server.agent('idem');
    const body = { destination: 'idem-target', event_name: 'charge', payload: { amount: 5 }, idempotency_key: 'order-17' };
    const first = await sender.post(`${M}/send`, body);
    const second = await sender.post(`${M}/send`, body);
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.data.message_id).toBe(first.body.data.message_id);
    const concurrent = await Promise.all(
      Array.from({ length: 5 }, () => sender.post(`${M}/send`, { ...body, idempotency_key: 'order-18' })),
    );
    expect(new Set(concurrent.map((r) => r.body.data.message_id)).size).toBe(1);
    const target = await server.agent('idem-target');
    expect(await receive(target, 'idem-target', 0, 100)).toHaveLength(2);
  });

  it('honours delay_seconds, waking a waiting long poll when the message comes due', async () => {
    const sender = await server.agent('delay-sender');
    const target = await server.agent('delay-target');
    const delayed = (await sender.post(`${M}/send`, { destination: 'delay-target', event_name: 'later', delay_seconds: 1 })).body.data
      .message_id;
    expect(await receive(target, 'delay-target', 0)).toEqual([]);
    const started = Date.now();
    const message = await receiveOne(target, 'delay-target', 5);
    expect(message.message_id).toBe(delayed);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('sends batches all or nothing', async () => {
    const sender = await server.agent('batcher');
    const ok = await sender.post(`${M}/send-batch`, {
      messages: Array.from({ length: 20 }, (_, i) => ({ destination: 'batch-target', event_name: 'b', payload: { i } })),
    });
    expect(ok.status).toBe(201);
    expect(ok.body.data.messages).toHaveLength(20);
    const bad = await sender.post(`${M}/send-batch`, {
      messages: [{ destination: 'batch-target', event_name: 'b' }, { destination: 'batch-target' }],
    });
    expect(bad.status).toBe(400);
    const target = await server.agent('batch-target');
    const received = await receive(target, 'batch-target', 0, 100);
    expect(received.map((m) => m.payload.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('reports the rate-limit budget of an agent, only to itself', async () => {
    const agent = await server.agent('budgeted');
    const res = await agent.get(`${M}/rate-limit`);
    expect(res.status).toBe(200);
    expect(res.body.data.limit).toBe(6000);
    expect(res.body.data.remaining).toBeLessThan(6000);
    expect(res.body.data.remaining).toBe(Number(res.headers.get('x-ratelimit-remaining')));
    expect(Date.parse(res.body.data.reset_at)).toBeGreaterThan(Date.now());
    expect((await agent.get(`${M}/rate-limit?agent_id=someone-else`)).status).toBe(403);
  });
});

// Leases end by the server's clock: these tests move it by hand, so that each boundary is exact
// and nothing waits for a lease to run out.
describeEachDialect('messaging: leases on the server clock', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock });

  /** Receives without waiting, leasing what it gets for one second; the message ids. */
  const leaseForOneSecond = async (agent: Api, agentId: string) => {
    const res = await agent.get(`${M}/receive?agent_id=${agentId}&visibility_timeout=1`);
    expect(res.status, res.text).toBe(200);
    return res.body.data.messages.map((m: InboxMessage) => m.message_id) as string[];
  };

  it('extend keeps a lease past its original end, and only until its new one', async () => {
    const producer = await server.agent('ext-producer');
    const worker = await server.agent('ext-worker');
    const sent = (await producer.post(`${M}/send`, { destination: 'ext-worker', event_name: 'slow' })).body.data.message_id;
    expect(await leaseForOneSecond(worker, 'ext-worker')).toEqual([sent]);
    clock.advance(500);
    const extended = await worker.post(`${M}/extend`, { message_id: sent, visibility_timeout: 3 });
    expect(extended.status, extended.text).toBe(200);
    expect(extended.body.data.visible_at).toBe(new Date(clock.now() + 3000).toISOString());
    // Past the end of the original lease, and up to the last millisecond of the new one: leased.
    clock.advance(1000);
    expect(await receive(worker, 'ext-worker', 0)).toEqual([]);
    clock.advance(1999);
    expect(await receive(worker, 'ext-worker', 0)).toEqual([]);
    clock.advance(1);
    expect(await receive(worker, 'ext-worker', 0)).toEqual([expect.objectContaining({ message_id: sent, retry_count: 1 })]);
    await acknowledge(worker, sent, { done: true });
  });

  it('settles at-most-once messages on delivery: nothing comes back when the lease would have ended', async () => {
    const sender = await server.agent('amo-sender');
    const target = await server.agent('amo-target');
    const once = (
      await sender.post(`${M}/send`, { destination: 'amo-target', event_name: 'fire-and-forget', delivery_semantic: 'at_most_once' })
    ).body.data.message_id;
    expect(await leaseForOneSecond(target, 'amo-target')).toEqual([once]);
    clock.advance(1000);
    expect(await receive(target, 'amo-target', 0)).toEqual([]);
    expect((await target.post(`${M}/acknowledge`, { message_id: once })).status).toBe(409);
  });
});

describeEachDialect('messaging: sessions, threads, topics', (dialect) => {
  const server = useServer(dialect);

  it('creates, lists and gets sessions', async () => {
    const created = await server.api.post(`${M}/sessions`, { name: 'review', metadata: { ticket: 9 } });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ name: 'review', metadata: { ticket: 9 }, created_by: 'admin' });
    expect(created.body.data.id).toMatch(/^ses_/);
    expect((await server.api.get(`${M}/sessions/${created.body.data.id}`)).body.data).toEqual(created.body.data);
    expect((await server.api.get(`${M}/sessions`)).body.data.map((s: { id: string }) => s.id)).toContain(created.body.data.id);
    expect((await server.api.get(`${M}/sessions/ses_missing`)).status).toBe(404);
  });

  it('enforces turn order (409 out of turn, 403 for non-participants) and keeps thread history in order', async () => {
    const session = (await server.api.post(`${M}/sessions`, { name: 'debate' })).body.data;
    const a = await server.agent('turn-a');
    const b = await server.agent('turn-b');
    const c = await server.agent('turn-c');
    const thread = await a.post(`${M}/threads`, {
      session_id: session.id,
      name: 'round',
      mode: 'turn',
      participants: ['turn-a', 'turn-b'],
    });
    expect(thread.status).toBe(201);
    expect(thread.body.data).toMatchObject({ mode: 'turn', participants: ['turn-a', 'turn-b'], next_speaker: 'turn-a' });
    const id = thread.body.data.id;
    const send = (agent: typeof a, destination: string, n: number) =>
      agent.post(`${M}/send`, { destination, event_name: 'say', payload: { n }, thread_id: id });
    expect((await send(b, 'turn-a', 0)).status).toBe(409);
    expect((await send(a, 'turn-b', 1)).status).toBe(201);
    expect((await send(a, 'turn-b', 2)).status).toBe(409);
    expect((await send(b, 'turn-a', 3)).status).toBe(201);
    expect((await send(c, 'turn-a', 4)).status).toBe(403);
    expect((await send(a, 'turn-c', 5)).status).toBe(400);
    expect((await send(a, 'turn-b', 6)).status).toBe(201);
    const history = await a.get(`${M}/threads/${id}/messages`);
    expect(history.body.data.map((m: { payload: { n: number } }) => m.payload.n)).toEqual([1, 3, 6]);
    expect((await b.get(`${M}/threads/${id}`)).body.data.next_speaker).toBe('turn-b');
    expect((await c.get(`${M}/threads/${id}`)).status).toBe(403);
    expect((await c.get(`${M}/threads/${id}/messages`)).status).toBe(403);

    const wild = await a.post(`${M}/threads`, { session_id: session.id, name: 'free', mode: 'wild', participants: ['turn-a', 'turn-b'] });
    for (const sender of [a, a, b]) {
      const res = await sender.post(`${M}/send`, {
        destination: sender === a ? 'turn-b' : 'turn-a',
        event_name: 'chat',
        thread_id: wild.body.data.id,
      });
      expect(res.status).toBe(201);
    }
    expect((await a.post(`${M}/threads`, { session_id: 'ses_missing', name: 'x', participants: ['turn-a'] })).status).toBe(404);
  });

  it('fans out publishes to exact and wildcard subscribers', async () => {
    const exact = await server.agent('sub-exact');
    const star = await server.agent('sub-star');
    const tail = await server.agent('sub-tail');
    const other = await server.agent('sub-other');
    expect((await exact.post(`${M}/subscribe`, { agent_id: 'sub-exact', topic: 'orders.created' })).status).toBe(201);
    expect((await exact.post(`${M}/subscribe`, { agent_id: 'sub-exact', topic: 'orders.created' })).status).toBe(200);
    await star.post(`${M}/subscribe`, { agent_id: 'sub-star', topic: 'orders.*' });
    await tail.post(`${M}/subscribe`, { agent_id: 'sub-tail', topic: 'orders.>' });
    await other.post(`${M}/subscribe`, { agent_id: 'sub-other', topic: 'payments.*' });
    expect((await other.post(`${M}/subscribe`, { agent_id: 'sub-exact', topic: 'x' })).status).toBe(403);
    expect((await other.post(`${M}/subscribe`, { agent_id: 'sub-other', topic: 'a.>.b' })).status).toBe(400);

    const published = await server.api.post(`${M}/publish`, { topic: 'orders.created', payload: { id: 1 } });
    expect(published.status).toBe(201);
    expect(published.body.data.count).toBe(3);
    const deep = await server.api.post(`${M}/publish`, { topic: 'orders.eu.created', payload: { id: 2 } });
    expect(deep.body.data.count).toBe(1);
    expect((await server.api.post(`${M}/publish`, { topic: 'orders.*', payload: {} })).status).toBe(400);

    const [e] = await receive(exact, 'sub-exact', 0);
    expect(e).toMatchObject({ event_name: 'orders.created', payload: { id: 1 }, source: 'admin' });
    expect((await receive(star, 'sub-star', 0)).map((m) => m.payload.id)).toEqual([1]);
    expect((await receive(tail, 'sub-tail', 0)).map((m) => m.payload.id)).toEqual([1, 2]);
    expect(await receive(other, 'sub-other', 0)).toEqual([]);

    const subs = await star.get(`${M}/subscriptions`);
    const subId = subs.body.data[0].id;
    expect((await other.delete(`${M}/subscriptions/${subId}`)).status).toBe(403);
    expect((await star.delete(`${M}/subscriptions/${subId}`)).status).toBe(200);
    expect((await server.api.post(`${M}/publish`, { topic: 'orders.created' })).body.data.count).toBe(2);
  });
});
