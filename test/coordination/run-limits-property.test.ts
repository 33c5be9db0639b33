import fc from 'fast-check';
import { expect, it } from 'vitest';
import { acknowledge, receive } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { R, useCoordination } from './fixture.js';

type Op = { kind: 'start'; key: 'a' | 'b'; priority: number } | { kind: 'finish' } | { kind: 'cancel'; pick: number };

/** The queue as the issue states it: at most `limit` active runs per key; a freed slot goes to the highest priority, then the oldest. */
class Model {
  readonly status = new Map<string, 'running' | 'queued' | 'done'>();
  private readonly runs: { id: string; key: string; priority: number; seq: number }[] = [];
  constructor(private readonly limit: number) {}

  private running(key: string) {
    return this.runs.filter((r) => r.key === key && this.status.get(r.id) === 'running').length;
  }

  start(id: string, key: string, priority: number): void {
    this.runs.push({ id, key, priority, seq: this.runs.length });
    this.status.set(id, this.running(key) < this.limit ? 'running' : 'queued');
  }

  end(id: string): void {
    const run = this.runs.find((r) => r.id === id)!;
    const held = this.status.get(id) === 'running';
    this.status.set(id, 'done');
    if (!held) return;
    const next = this.runs
      .filter((r) => r.key === run.key && this.status.get(r.id) === 'queued')
      .sort((x, y) => y.priority - x.priority || x.seq - y.seq)[0];
    if (next) this.status.set(next.id, 'running');
  }
}

/** A property test of plan concurrency: any sequence of starts, finishes and cancels leaves the runs as the model says. */
describeEachDialect('coordination run limits (property)', (dialect) => {
  const { server, unique, plan } = useCoordination(dialect);

  it('queued runs start by priority then arrival, never over the limit of their key', async () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('start' as const),
          key: fc.constantFrom('a' as const, 'b' as const),
          priority: fc.integer({ min: 0, max: 9 }),
        }),
      },
      { weight: 2, arbitrary: fc.constant({ kind: 'finish' as const }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 }), fc.array(op, { minLength: 1, maxLength: 14 }), async (limit, ops) => {
        const worker = unique('prop');
        const client = await server.agent(worker);
        const planId = await plan({
          concurrency: { limit, key: '{{input.k}}' },
          steps: [{ id: 'work', type: 'agent', agent: worker }],
        });
        const model = new Model(limit);
        const ids: string[] = [];
        for (const o of ops) {
          if (o.kind === 'start') {
            const res = await server.api.post(R, { plan_id: planId, input: { k: o.key }, priority: o.priority });
            expect(res.status, res.text).toBe(201);
            ids.push(res.body.data.id);
            model.start(res.body.data.id, o.key, o.priority);
          } else if (o.kind === 'finish') {
            const [message] = await receive(client, worker, 0, 1);
            if (!message) continue;
            await acknowledge(client, message.message_id, {});
            model.end(message.payload.run_id as string);
          } else {
            const open = ids.filter((id) => model.status.get(id) !== 'done');
            if (open.length === 0) continue;
            const id = open[o.pick % open.length]!;
            expect((await server.api.post(`${R}/${id}/cancel`, {})).status).toBe(200);
            model.end(id);
          }
          const listed = (await server.api.get(`${R}?plan_id=${planId}&limit=100`)).body.data as { id: string; status: string }[];
          const actual = Object.fromEntries(
            listed.map((r) => [r.id, r.status === 'queued' ? 'queued' : r.status === 'running' ? 'running' : 'done']),
          );
          expect(actual).toEqual(Object.fromEntries(model.status));
        }
      }),
      { numRuns: 25 },
    );
  });
});
