import fc from 'fast-check';
import { sql } from 'kysely';
import { expect, it } from 'vitest';
import type { Api } from '../helpers/api.js';
import { receive } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';
const AGENTS = ['cnt-a', 'cnt-b', 'cnt-c'];
const DAY = 86_400_000;

type Op =
  | { kind: 'send'; to: number; maxDeliveries: number; delayed: boolean }
  | { kind: 'receive'; agent: number; max: number }
  | { kind: 'ack' | 'reject' | 'redrive'; pick: number; requeue: boolean }
  | { kind: 'advance'; ms: number }
  | { kind: 'retention' };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      to: fc.nat(2),
      maxDeliveries: fc.integer({ min: 1, max: 3 }),
      delayed: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('receive' as const), agent: fc.nat(2), max: fc.integer({ min: 1, max: 3 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom('ack' as const, 'reject' as const, 'redrive' as const),
      pick: fc.nat(),
      requeue: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 60_000 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'retention' as const }) },
);

/** A start that makes each change at least once (0 picks the newest): a dead letter, redriven, received and acknowledged. */
const EACH_CHANGE: Op[] = [
  { kind: 'send', to: 0, maxDeliveries: 1, delayed: false },
  { kind: 'receive', agent: 0, max: 1 },
  { kind: 'reject', pick: 0, requeue: false },
  { kind: 'redrive', pick: 0, requeue: false },
  { kind: 'receive', agent: 0, max: 1 },
  { kind: 'ack', pick: 0, requeue: false },
];

describeEachDialect('messaging: inbox counters', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock });

  const counters = async () => {
    const { rows } = await sql<{ destination: string; pending: number; dead: number }>`
      select destination, pending, dead from inbox_counters where pending <> 0 or dead <> 0 order by destination`.execute(
      server.app.platform.database.db,
    );
    return rows.map((row) => [row.destination, Number(row.pending), Number(row.dead)]);
  };
  const deadLetters = async () => {
    const { rows } = await sql<{ id: string }>`select id from messages where state = 'dead' order by seq`.execute(
      server.app.platform.database.db,
    );
    return rows.map((row) => row.id);
  };
  const recount = async () => {
    const { rows } = await sql<{ destination: string; pending: number; dead: number }>`
      select destination, sum(case when state = 'pending' then 1 else 0 end) as pending, sum(case when state = 'dead' then 1 else 0 end) as dead
      from messages where state in ('pending', 'dead') group by destination order by destination`.execute(server.app.platform.database.db);
    return rows.map((row) => [row.destination, Number(row.pending), Number(row.dead)]);
  };

  it('equal a recount after any sequence of sends, leases, acks, rejects, expiries, redrives and retention', async () => {
    const agents: Api[] = [];
    for (const id of AGENTS) agents.push(await server.agent(id));
    const owner = new Map<string, number>();
    const received: string[] = [];
    const outcomes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 30 }), async (random) => {
        const ops = [...EACH_CHANGE, ...random];
        for (const step of ops) {
          if (step.kind === 'send') {
            const res = await server.api.post(`${M}/send`, {
              destination: AGENTS[step.to],
              event_name: 'work',
              max_deliveries: step.maxDeliveries,
              ...(step.delayed ? { delay_seconds: 30 } : {}),
            });
            expect(res.status, res.text).toBe(201);
            owner.set(res.body.data.message_id, step.to);
          } else if (step.kind === 'receive') {
            for (const message of await receive(agents[step.agent]!, AGENTS[step.agent]!, 0, step.max)) received.push(message.message_id);
          } else if (step.kind === 'advance') {
            clock.advance(step.ms);
          } else if (step.kind === 'retention') {
            clock.advance(40 * DAY);
            while ((await server.app.retention.pass())?.more) {
              // a full batch: another pass
            }
          } else {
            // Acks and rejects take a message received before (its lease may have run out since),
            // redrives a dead letter: any answer will do, the counters must follow what happened.
            const from = step.kind === 'redrive' ? await deadLetters() : received;
            const id = from[from.length - 1 - (step.pick % Math.max(1, from.length))];
            if (id === undefined) continue;
            const agent = agents[owner.get(id)!]!;
            let res;
            if (step.kind === 'ack') res = await agent.post(`${M}/acknowledge`, { message_id: id });
            else if (step.kind === 'reject') res = await agent.post(`${M}/reject`, { message_id: id, reason: 'no', requeue: step.requeue });
            else {
              res = await server.api.post(`${M}/dead-letters/${id}/redrive`, {});
              if (res.status === 201) owner.set(res.body.data.message_id, owner.get(id)!);
            }
            outcomes.add(`${step.kind} ${res.status}`);
          }
        }
        expect(await counters()).toEqual(await recount());
      }),
      { numRuns: 25 },
    );
    // The runs did each kind of change.
    expect([...outcomes].sort()).toEqual(expect.arrayContaining(['ack 200', 'redrive 201', 'reject 200']));
  });
});
