import fc from 'fast-check';
import { expect, it } from 'vitest';
import { EventCounts, type CountedWindow } from '../../src/alerts/event-counts.js';
import { SignalsStore } from '../../src/alerts/signals-store.js';
import { autocommit } from '../../src/kernel/tx.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const TYPES = ['run.completed', 'run.failed', 'task.created'] as const;
const SUBJECTS = ['run_a', 'run_b'] as const;
const PLANS = ['plan_a', 'plan_b'] as const;

/** Windows of each kind of filter: types or every type, a subject, a plan, three lengths. */
const WINDOWS: CountedWindow[] = [
  { id: 'completed-10s', filter: { types: ['run.completed'] }, windowMs: 10_000 },
  { id: 'runs-60s', filter: { types: ['run.completed', 'run.failed'] }, windowMs: 60_000 },
  { id: 'all-300s', filter: { types: null }, windowMs: 300_000 },
  { id: 'subject-60s', filter: { types: null, subject: 'run_a' }, windowMs: 60_000 },
  { id: 'plan-10s', filter: { types: ['run.failed'], plan_id: 'plan_b' }, windowMs: 10_000 },
];

const step = fc.record({
  advanceMs: fc.integer({ min: 0, max: 90_000 }),
  events: fc.array(
    fc.record({
      type: fc.constantFrom(...TYPES),
      subject: fc.constantFrom(...SUBJECTS),
      plan: fc.option(fc.constantFrom(...PLANS), { nil: undefined }),
      // Appended a little after it was stamped: another node's clock, a slow transaction.
      lagMs: fc.integer({ min: 0, max: 3_000 }),
    }),
    { maxLength: 15 },
  ),
});

describeEachDialect('alert event counts', (dialect) => {
  const server = useServer(dialect);
  let base = Date.now() + 10 * 86_400_000;

  it('kept between passes, equal to each window counted whole after any sequence of appends and passes', async () => {
    const { db, caps } = server.app.platform.database;
    const store = new SignalsStore(db, caps);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        // Each run far after the last, so that no window reaches the events of another.
        base += 30 * 86_400_000;
        let now = base;
        const counts = new EventCounts(store, () => 0);
        for (const { advanceMs, events } of steps) {
          now += advanceMs;
          if (events.length > 0)
            await db
              .insertInto('events')
              .values(
                events.map((e) => ({
                  type: e.type,
                  subject: e.subject,
                  actor: 'system',
                  data: JSON.stringify(e.plan ? { plan_id: e.plan } : {}),
                  reason: null,
                  readers: null,
                  created_at: now - e.lagMs,
                })),
              )
              .execute();
          const kept = await counts.count(WINDOWS, now);
          const whole = await store.countEvents(
            autocommit,
            WINDOWS.map((w) => ({ ...w.filter, since: now - w.windowMs })),
            0,
          );
          expect(WINDOWS.map((w) => kept.get(w.id))).toEqual(whole);
        }
      }),
      { numRuns: 25 },
    );
  });
});
