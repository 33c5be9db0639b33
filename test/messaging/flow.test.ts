import pg from 'pg';
import { expect, it } from 'vitest';
import { receive } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const M = '/api/v1/messaging';

describeEachDialect('messaging: priority, ordering keys and fairness keys', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock });

  const send = async (destination: string, event_name: string, extra: Record<string, unknown> = {}) => {
    const res = await server.api.post(`${M}/send`, { destination, event_name, ...extra });
    expect(res.status, res.text).toBe(201);
    return res.body.data.message_id as string;
  };
  const events = async (agentId: string, max = 10, visibility = 30) => {
    const worker = await server.agent(agentId);
    const res = await worker.get(`${M}/receive?agent_id=${agentId}&max=${max}&visibility_timeout=${visibility}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data.messages as { message_id: string; event_name: string; priority: number; ordering_key: string | null }[];
  };
  const names = async (agentId: string, max = 10, visibility = 30) => (await events(agentId, max, visibility)).map((m) => m.event_name);
  const ack = async (ids: string[]) => expect((await server.api.post(`${M}/acknowledge`, { message_ids: ids })).status).toBe(200);

  it('receives higher priorities first and keeps send order within a priority, on send, send-batch and publish', async () => {
    await send('flow-prio', 'low-1', { priority: 1 });
    await send('flow-prio', 'default-1');
    await send('flow-prio', 'urgent-1', { priority: 9 });
    const batch = await server.api.post(`${M}/send-batch`, {
      messages: [
        { destination: 'flow-prio', event_name: 'low-2', priority: 1 },
        { destination: 'flow-prio', event_name: 'urgent-2', priority: 9 },
        { destination: 'flow-prio', event_name: 'default-2' },
      ],
    });
    expect(batch.status, batch.text).toBe(201);
    expect((await server.api.post(`${M}/subscribe`, { agent_id: 'flow-prio', topic: 'flow.alerts' })).status).toBe(201);
    const published = await server.api.post(`${M}/publish`, { topic: 'flow.alerts', priority: 9 });
    expect(published.status, published.text).toBe(201);

    const pending = await server.api.get(`${M}/inboxes/flow-prio/messages`);
    expect(pending.body.data.map((m: { event_name: string; priority: number }) => [m.event_name, m.priority])).toEqual([
      ['urgent-1', 9],
      ['urgent-2', 9],
      ['flow.alerts', 9],
      ['default-1', 4],
      ['default-2', 4],
      ['low-1', 1],
      ['low-2', 1],
    ]);
    expect(await names('flow-prio', 2)).toEqual(['urgent-1', 'urgent-2']);
    expect(await names('flow-prio', 10)).toEqual(['flow.alerts', 'default-1', 'default-2', 'low-1', 'low-2']);
  });

  it('delivers one message of an ordering key at a time, in send order, released by ack, dead letter or lease expiry', async () => {
    const a1 = await send('flow-order', 'a1', { ordering_key: 'conv-a', max_deliveries: 2 });
    const a2 = await send('flow-order', 'a2', { ordering_key: 'conv-a' });
    const b1 = await send('flow-order', 'b1', { ordering_key: 'conv-b' });
    const a3 = await send('flow-order', 'a3', { ordering_key: 'conv-a', priority: 9 });
    const b2 = await send('flow-order', 'b2', { ordering_key: 'conv-b' });
    const free = await send('flow-order', 'free');

    // a3's priority does not take it past a1 and a2 of its key.
    const pending = await server.api.get(`${M}/inboxes/flow-order/messages`);
    expect(pending.body.data.map((m: { event_name: string; blocked_by: string | null }) => [m.event_name, m.blocked_by])).toEqual([
      ['a3', 'ordering_key'],
      ['a1', null],
      ['a2', 'ordering_key'],
      ['b1', null],
      ['b2', 'ordering_key'],
      ['free', null],
    ]);
    expect(await names('flow-order')).toEqual(['a1', 'b1', 'free']);
    expect(await names('flow-order')).toEqual([]);

    // Acknowledged: the next of its key comes.
    await ack([b1]);
    expect(await names('flow-order')).toEqual(['b2']);
    await ack([b2, free]);

    // a1's lease runs out: a1 again, not a2.
    clock.advance(31_000);
    expect(await names('flow-order', 10, 30)).toEqual(['a1']);
    // Rejected without requeue (dead-lettered): a2 comes.
    const rejected = await server.api.post(`${M}/reject`, { message_id: a1, reason: 'bad', requeue: false });
    expect(rejected.body.data.status).toBe('dead_lettered');
    expect(await names('flow-order')).toEqual(['a2']);
    await ack([a2]);
    const last = await events('flow-order');
    expect(last.map((m) => [m.message_id, m.priority, m.ordering_key])).toEqual([[a3, 9, 'conv-a']]);
  });

  it('counts the messages held by their ordering key in the held messages gauge', async () => {
    const held = async () => {
      const line = (await server.api.get('/metrics')).text
        .split('\n')
        .find((l) => l.startsWith('switchboard_messages_held{blocked_by="ordering_key"}'));
      return Number(line?.split(' ')[1]);
    };
    const before = await held();
    const [x1] = [await send('flow-held', 'x1', { ordering_key: 'x' })];
    await send('flow-held', 'x2', { ordering_key: 'x' });
    await send('flow-held', 'x3', { ordering_key: 'x' });
    await send('flow-held', 'y1', { ordering_key: 'y' });
    await send('flow-held', 'free');
    expect(await held()).toBe(before + 2);
    expect(await names('flow-held')).toEqual(['x1', 'y1', 'free']);
    expect(await held()).toBe(before + 2);
    await ack([x1!]);
    expect(await held()).toBe(before + 1);
    const rest = await events('flow-held');
    await ack(rest.map((m) => m.message_id));
    const last = await events('flow-held');
    await ack(last.map((m) => m.message_id));
  });

  it('releases the next message of a key when the reaper dead-letters an expired last lease', async () => {
    await send('flow-reap', 'r1', { ordering_key: 'k', max_deliveries: 1 });
    await send('flow-reap', 'r2', { ordering_key: 'k' });
    expect(await names('flow-reap', 10, 1)).toEqual(['r1']);
    clock.advance(2_000);
    await waitFor(async () => (await server.api.get(`${M}/dead-letters?agent_id=flow-reap`)).body.data[0], 5000, 20);
    expect(await names('flow-reap')).toEqual(['r2']);
  });

  it('wakes a long poll waiting behind an ordering key when the message before is acknowledged', async () => {
    const first = await send('flow-wake', 'w1', { ordering_key: 'k' });
    await send('flow-wake', 'w2', { ordering_key: 'k' });
    expect(await names('flow-wake')).toEqual(['w1']);
    const worker = await server.agent('flow-wake');
    const arrival = server.requestArrival('GET', `${M}/receive`);
    const poll = receive(worker, 'flow-wake', 20);
    await arrival;
    await ack([first]);
    expect((await poll).map((m) => m.event_name)).toEqual(['w2']);
  });

  it("serves fairness keys in turn: one key's backlog does not delay another key's message", async () => {
    const backlog = Array.from({ length: 200 }, (_, i) => ({ destination: 'flow-fair', event_name: `a${i}`, fairness_key: 'tenant-a' }));
    expect((await server.api.post(`${M}/send-batch`, { messages: backlog })).status).toBe(201);
    await send('flow-fair', 'b0', { fairness_key: 'tenant-b' });
    await send('flow-fair', 'b1', { fairness_key: 'tenant-b' });
    await send('flow-fair', 'c0', { fairness_key: 'tenant-c' });
    // Each key's first, then each key's second, …
    expect(await names('flow-fair', 5)).toEqual(['a0', 'b0', 'c0', 'a1', 'b1']);
    expect(await names('flow-fair', 2)).toEqual(['a2', 'a3']);
    // A key whose messages were all received starts again at the front.
    await send('flow-fair', 'c1', { fairness_key: 'tenant-c' });
    expect(await names('flow-fair', 2)).toEqual(['c1', 'a4']);
  });

  it('refuses a priority out of range and keys too long or empty, with 400 and nothing written', async () => {
    const bad = [
      { priority: 10 },
      { priority: -1 },
      { priority: 2.5 },
      { ordering_key: 'k'.repeat(256) },
      { fairness_key: 'k'.repeat(256) },
      { ordering_key: '' },
    ];
    for (const extra of bad) {
      const res = await server.api.post(`${M}/send`, { destination: 'flow-bad', event_name: 'x', ...extra });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      const batch = await server.api.post(`${M}/send-batch`, {
        messages: [
          { destination: 'flow-bad', event_name: 'ok' },
          { destination: 'flow-bad', event_name: 'x', ...extra },
        ],
      });
      expect(batch.status).toBe(400);
      expect((await server.api.post(`${M}/publish`, { topic: 'flow.bad', ...extra })).status).toBe(400);
    }
    expect((await server.api.get(`${M}/inboxes/flow-bad/messages`)).body.meta.total).toBe(0);
    expect(
      (await server.api.post(`${M}/send`, { destination: 'flow-bad', event_name: 'x', ordering_key: 'k'.repeat(255), priority: 0 })).status,
    ).toBe(201);
  });

  it('never leases two messages of one ordering key at once to concurrent receivers', async () => {
    const keys = 8;
    const perKey = 25;
    const messages = [];
    for (let i = 0; i < perKey; i++)
      for (let k = 0; k < keys; k++) messages.push({ destination: 'flow-race', event_name: `${k}:${i}`, ordering_key: `key-${k}` });
    expect((await server.api.post(`${M}/send-batch`, { messages })).status).toBe(201);
    const worker = await server.agent('flow-race');

    const next = new Map<string, number>();
    // Keys with a message leased to some receiver; a key leaves before its ack is sent, so a
    // receive that overlapped a lease of its key is caught whatever the interleaving.
    const inFlight = new Set<string>();
    let done = 0;
    const receiver = async () => {
      let idle = 0;
      while (done < keys * perKey && idle < 50) {
        const res = await worker.get(`${M}/receive?agent_id=flow-race&max=5&timeout=0`);
        const got = res.body.data.messages as { message_id: string; event_name: string; ordering_key: string }[];
        idle = got.length === 0 ? idle + 1 : 0;
        for (const m of got) {
          expect(inFlight.has(m.ordering_key), m.event_name).toBe(false);
          inFlight.add(m.ordering_key);
          const [, i] = m.event_name.split(':');
          expect(Number(i)).toBe(next.get(m.ordering_key) ?? 0);
          next.set(m.ordering_key, Number(i) + 1);
        }
        if (got.length > 0) {
          for (const m of got) inFlight.delete(m.ordering_key);
          const acked = await worker.post(`${M}/acknowledge`, { message_ids: got.map((m) => m.message_id) });
          expect(acked.status).toBe(200);
          done += got.length;
        }
      }
    };
    await Promise.all(Array.from({ length: 4 }, receiver));
    expect(done).toBe(keys * perKey);
  });
  it('keeps one key in send order and never overlapping when its sends commit out of order, under concurrent receivers', async () => {
    // PostgreSQL: every 'slow' insert sleeps in a trigger after its row (and seq) is made and
    // before its commit, and the next send of its key starts from another connection meanwhile:
    // the window in which a later send of the key can commit first. SQLite has one writer.
    const admin = dialect === 'postgres' ? new pg.Client({ connectionString: server.database.databaseUrl! }) : null;
    await admin?.connect();
    try {
      await admin?.query(`create function slow_send() returns trigger language plpgsql as $$
        begin perform pg_sleep(0.03); return null; end $$;
        create trigger slow_send after insert on messages for each row when (new.event_name = 'slow') execute function slow_send()`);
      const iterations = 200;
      const order = new Map<string, string[]>();
      const inFlight = new Set<string>();
      let received = 0;
      let sending = true;
      const receiver = async () => {
        // A key each: the rate limit counts per key.
        const worker = await server.agent('flow-commit-race');
        while (sending || received < iterations * 2) {
          const res = await worker.get(`${M}/receive?agent_id=flow-commit-race&max=5&timeout=0`);
          expect(res.status, res.text).toBe(200);
          const got = res.body.data.messages as { message_id: string; event_name: string; ordering_key: string }[];
          for (const m of got) {
            expect(inFlight.has(m.ordering_key), `${m.ordering_key} overlaps`).toBe(false);
            inFlight.add(m.ordering_key);
            order.set(m.ordering_key, [...(order.get(m.ordering_key) ?? []), m.event_name]);
          }
          if (got.length === 0) {
            await new Promise((resolve) => setTimeout(resolve, 20));
            continue;
          }
          // A key leaves before its ack is sent: a receive overlapping its lease is caught.
          for (const m of got) inFlight.delete(m.ordering_key);
          expect((await worker.post(`${M}/acknowledge`, { message_ids: got.map((m) => m.message_id) })).status).toBe(200);
          received += got.length;
        }
      };
      // Until the earlier send sleeps before its commit (or has committed: the window was missed).
      const sleeping = async (sent: Promise<unknown>) => {
        let done = false;
        void sent.finally(() => (done = true));
        while (!done) {
          const { rows } = await admin!.query(
            "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event = 'PgSleep'",
          );
          if (rows[0].n > 0) return;
        }
      };
      const sender = async () => {
        for (let i = 0; i < iterations; i++) {
          const key = `key-${i}`;
          const arrival = server.requestArrival('POST', `${M}/send`);
          const slow = server.api.post(`${M}/send`, { destination: 'flow-commit-race', event_name: 'slow', ordering_key: key });
          // The later send starts once the earlier one has its row and waits to commit.
          await arrival;
          if (admin) await sleeping(slow);
          else await new Promise((resolve) => setTimeout(resolve, 5));
          const fast = server.api.post(`${M}/send`, { destination: 'flow-commit-race', event_name: 'fast', ordering_key: key });
          for (const res of await Promise.all([slow, fast])) expect(res.status, res.text).toBe(201);
        }
        sending = false;
      };
      await Promise.all([sender(), receiver(), receiver(), receiver()]);
      for (let i = 0; i < iterations; i++) expect(order.get(`key-${i}`), `key-${i}`).toEqual(['slow', 'fast']);
    } finally {
      await admin?.end();
    }
  }, 120_000);
});
