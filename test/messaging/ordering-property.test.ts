import fc from 'fast-check';
import { expect, it } from 'vitest';
import WebSocket from 'ws';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const M = '/api/v1/messaging';
const KEYS = ['a', 'b', 'c'];
const MAX_DELIVERIES = 2;
const VISIBILITY_S = 30;

type Op =
  | { kind: 'send'; key: number; count: number; priority: number }
  /** HTTP receives at once, of these sizes. */
  | { kind: 'receive'; maxes: number[] }
  /** More credit for the channel. */
  | { kind: 'credit'; credit: number }
  /** Settle one of the leased messages: acknowledge, reject to be redelivered, or reject to the dead letters. */
  | { kind: 'settle'; pick: number; how: 'ack' | 'requeue' | 'dead' }
  /** Every lease runs out. */
  | { kind: 'expire' };

const OPS: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      key: fc.nat(KEYS.length - 1),
      count: fc.integer({ min: 1, max: 3 }),
      priority: fc.integer({ min: 0, max: 9 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('receive' as const),
      maxes: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('credit' as const), credit: fc.integer({ min: 1, max: 3 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      how: fc.constantFrom('ack' as const, 'requeue' as const, 'dead' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
);

/** A message sent, as the test knows it. */
interface Sent {
  id: string;
  key: string;
  /** Its place among its key's messages, in send order. */
  index: number;
  deliveries: number;
  /** Acknowledged or dead-lettered by the test's own call. */
  settled: boolean;
}

/**
 * Ordering keys under random traffic: sends of three keys at random priorities, HTTP receivers
 * at once beside an agent channel, acknowledgements, rejections (redelivered or dead-lettered),
 * and leases running out (a message delivered twice is exhausted and dead-lettered by the
 * reaper). Each delivery is checked as it is seen: no other message of its key is leased, and
 * every message of its key sent before it is settled (or exhausted). Before a settlement, before
 * the clock moves on and at the end, the test waits until the channel is still (every lease the
 * server holds seen delivered, and no credit left or nothing the channel could take), so that no
 * claim reads the clock of before and leases after; then the server's leases are the test's.
 */
describeEachDialect('messaging: ordering keys under random traffic (property)', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock });
  let runs = 0;

  it('delivers one message of a key at a time, in send order, through acks, rejects, lease expiries and dead letters', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(OPS, { minLength: 5, maxLength: 25 }), async (ops) => {
        const agentId = `order-prop-${dialect}-${++runs}`;
        const worker = await server.agent(agentId);
        const sent = new Map<string, Sent>();
        const byKey = new Map<string, Sent[]>(KEYS.map((key) => [key, []]));
        /** The message of each key leased now, and whether the channel holds it. */
        const leased = new Map<string, { message: Sent; channel: boolean }>();
        // Thrown where it is seen, so that fast-check shrinks the traffic that shows it.
        const violation = (what: string) => {
          throw new Error(what);
        };
        const delivered = (id: string, channel: boolean) => {
          const message = sent.get(id);
          if (message === undefined) return violation(`${id}: not sent by the test`);
          const holder = leased.get(message.key);
          if (holder !== undefined) violation(`${message.key}: #${message.index} delivered while #${holder.message.index} is leased`);
          if (message.settled) violation(`${message.key}: #${message.index} delivered after it was settled`);
          for (const earlier of byKey.get(message.key)!.slice(0, message.index)) {
            if (!earlier.settled && earlier.deliveries < MAX_DELIVERIES)
              violation(`${message.key}: #${message.index} delivered before #${earlier.index} was settled`);
          }
          message.deliveries++;
          leased.set(message.key, { message, channel });
        };

        // The channel's pushes are taken in at the next step (a push may overtake the send's answer).
        const pushes: string[] = [];
        let [granted, arrived] = [0, 0];
        const answers = new Map<number, { ok?: { failed: unknown[] } }>();
        let frameId = 0;
        const socket = new WebSocket(
          `${worker.baseUrl.replace(/^http/, 'ws')}${M}/channel?agent_id=${agentId}&visibility_timeout=${VISIBILITY_S}`,
          { headers: { authorization: `Bearer ${worker.key}` } },
        );
        socket.on('message', (data) => {
          const frame = JSON.parse(String(data));
          if (frame.message) pushes.push(frame.message.message_id);
          else if (typeof frame.id === 'number') answers.set(frame.id, frame);
        });
        await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
        const takePushes = () => {
          for (const id of pushes.splice(0)) {
            arrived++;
            delivered(id, true);
          }
        };
        const request = async (kind: string, body: unknown) => {
          const id = ++frameId;
          socket.send(JSON.stringify({ id, [kind]: body }));
          const answer = await waitFor(() => answers.get(id), 10_000);
          expect(answer.ok?.failed, JSON.stringify(answer)).toEqual([]);
        };
        /** Until the channel is still; then the server's leases are the test's, each seen delivered as many times. */
        const still = async () => {
          type Listed = { message_id: string; deliveries: number; max_deliveries: number; visible_at: string; blocked_by: string | null };
          const list = async (state: string) =>
            (await server.api.get(`${M}/inboxes/${agentId}/messages?state=${state}&limit=100`)).body.data as Listed[];
          const leases = await waitFor(async () => {
            takePushes();
            const [leases, waiting] = [await list('leased'), await list('pending')];
            const seen = (lease: Listed) =>
              [...leased.values()].some((held) => held.message.id === lease.message_id && held.message.deliveries === lease.deliveries);
            const takeable = (m: Listed) =>
              m.blocked_by === null && m.deliveries < m.max_deliveries && Date.parse(m.visible_at) <= clock.now();
            // Nothing on its way, no exhausted message the reaper has yet to dead-letter (which
            // frees its key), and nothing the channel may still take.
            const exhausted = (m: Listed) => m.deliveries >= m.max_deliveries;
            const quiet = pushes.length === 0 && !waiting.some(exhausted) && (granted === arrived || !waiting.some(takeable));
            return quiet && leases.every(seen) ? leases : null;
          }, 5_000);
          expect(leases.map((lease) => lease.message_id).sort()).toEqual([...leased.values()].map((held) => held.message.id).sort());
        };

        try {
          for (const op of ops) {
            takePushes();
            if (op.kind === 'send') {
              const key = KEYS[op.key]!;
              const messages = Array.from({ length: op.count }, () => ({
                destination: agentId,
                event_name: 'work',
                ordering_key: key,
                priority: op.priority,
                max_deliveries: MAX_DELIVERIES,
              }));
              const res = await server.api.post(`${M}/send-batch`, { messages });
              expect(res.status, res.text).toBe(201);
              for (const { message_id } of res.body.data.messages as { message_id: string }[]) {
                const message = { id: message_id, key, index: byKey.get(key)!.length, deliveries: 0, settled: false };
                sent.set(message_id, message);
                byKey.get(key)!.push(message);
              }
            } else if (op.kind === 'receive') {
              const got = await Promise.all(
                op.maxes.map((max) =>
                  worker.get(`${M}/receive?agent_id=${agentId}&max=${max}&timeout=0&visibility_timeout=${VISIBILITY_S}`),
                ),
              );
              takePushes();
              for (const res of got) {
                expect(res.status, res.text).toBe(200);
                for (const m of res.body.data.messages as { message_id: string }[]) delivered(m.message_id, false);
              }
            } else if (op.kind === 'credit') {
              granted += op.credit;
              socket.send(JSON.stringify({ credit: op.credit }));
            } else if (op.kind === 'settle') {
              await still();
              const held = [...leased.values()];
              if (held.length === 0) continue;
              const { message, channel } = held[op.pick % held.length]!;
              // The key is free before the call that frees it: a delivery its commit allows is never taken for an overlap.
              leased.delete(message.key);
              if (op.how !== 'requeue' || message.deliveries >= MAX_DELIVERIES) message.settled = true;
              if (op.how === 'ack') {
                if (channel) await request('ack', [message.id]);
                else expect((await worker.post(`${M}/acknowledge`, { message_id: message.id })).status).toBe(200);
              } else {
                const rejection = { message_id: message.id, reason: 'property', requeue: op.how === 'requeue', delay_seconds: 0 };
                if (channel) await request('reject', [rejection]);
                else expect((await worker.post(`${M}/reject`, rejection)).status).toBe(200);
              }
            } else {
              await still();
              leased.clear();
              clock.advance((VISIBILITY_S + 1) * 1000);
            }
          }
          await still();
        } finally {
          socket.close();
        }
      }),
      { numRuns: 25 },
    );
  });
});
