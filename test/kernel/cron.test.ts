import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cronProblem, decideSlots, isValidTimeZone, MISSED_AFTER_MS, Schedule } from '../../src/kernel/cron.js';

const t = (s: string) => Date.parse(s);
const isoList = (times: number[]) => times.map((x) => new Date(x).toISOString());

describe('cron parsing', () => {
  it.each(['* * * * *', '*/5 * * * * *', '0 9 * * MON-FRI', '@hourly', '@daily', '0 0 1 1 *'])('accepts %s', (expression) => {
    expect(cronProblem(expression)).toBeNull();
  });

  it.each(['', '* * * *', '61 * * * *', 'every minute', '* * * * * * * *'])('rejects %j with a reason', (expression) => {
    expect(cronProblem(expression)).toEqual(expect.any(String));
  });

  it('knows IANA zones', () => {
    expect(isValidTimeZone('Europe/Paris')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('Mars/Olympus_Mons')).toBe(false);
  });
});

describe('fire times across DST (America/New_York)', () => {
  it('spring forward: 02:30 does not exist on 2026-03-08 and fires once, at 03:00 EDT', () => {
    const schedule = new Schedule('30 2 * * *', 'America/New_York');
    expect(isoList(schedule.upcoming(t('2026-03-07T12:00:00Z'), 3))).toEqual([
      '2026-03-08T07:00:00.000Z', // 03:00 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
      '2026-03-10T06:30:00.000Z',
    ]);
  });

  it('fall back: 01:30 happens twice on 2026-11-01 and fires once', () => {
    const schedule = new Schedule('30 1 * * *', 'America/New_York');
    expect(isoList(schedule.upcoming(t('2026-10-31T12:00:00Z'), 3))).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT, the first of the two
      '2026-11-02T06:30:00.000Z', // 01:30 EST
      '2026-11-03T06:30:00.000Z',
    ]);
  });

  it('an hourly schedule has 23 slots on the spring day and 25 on the fall day', () => {
    const hourly = new Schedule('0 * * * *', 'America/New_York');
    const count = (from: string, to: string) => hourly.upcoming(t(from) - 1, 30).filter((x) => x < t(to)).length;
    expect(count('2026-03-08T05:00:00Z', '2026-03-09T04:00:00Z')).toBe(23);
    expect(count('2026-11-01T04:00:00Z', '2026-11-02T05:00:00Z')).toBe(25);
  });
});

describe('due slots and catch-up', () => {
  const everyMinute = new Schedule('* * * * *');

  it('lists the slots from the first due one up to now', () => {
    const slots = everyMinute.dueSlots(t('2026-01-01T00:00:00Z'), t('2026-01-01T00:03:30Z'));
    expect(isoList(slots)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
      '2026-01-01T00:03:00.000Z',
    ]);
  });

  it('keeps only the most recent slots after a long outage, without walking all of them', () => {
    const everySecond = new Schedule('* * * * * *');
    const started = performance.now();
    const slots = everySecond.dueSlots(t('2025-01-01T00:00:00Z'), t('2026-01-01T00:00:00Z'), 101);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(slots).toHaveLength(101);
    expect(slots[100]).toBe(t('2026-01-01T00:00:00Z'));
  });

  it('latest fires the most recent slot and records the others as skipped', () => {
    const now = t('2026-01-01T01:00:10Z');
    const slots = everyMinute.dueSlots(t('2026-01-01T00:55:00Z'), now);
    const decision = decideSlots(slots, now, 'latest');
    expect(isoList(decision.fire)).toEqual(['2026-01-01T01:00:00.000Z']);
    expect(decision.skip).toHaveLength(5);
  });

  it('none skips missed slots but fires one that is on time', () => {
    const now = t('2026-01-01T01:00:10Z');
    const slots = everyMinute.dueSlots(t('2026-01-01T00:55:00Z'), now);
    const decision = decideSlots(slots, now, 'none');
    expect(isoList(decision.fire)).toEqual(['2026-01-01T01:00:00.000Z']);
    expect(decision.skip.map((s) => s.reason)).toEqual(Array(5).fill('missed (catch_up: none)'));
  });

  it('all fires every slot', () => {
    const now = t('2026-01-01T01:00:10Z');
    const slots = everyMinute.dueSlots(t('2026-01-01T00:55:00Z'), now);
    expect(decideSlots(slots, now, 'all')).toEqual({ fire: slots, skip: [] });
  });

  it('every due slot is either fired or skipped, never both, under every policy', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 10_000_000 }), { maxLength: 40 }),
        fc.constantFrom('none' as const, 'latest' as const, 'all' as const),
        (offsets, policy) => {
          const now = 20_000_000;
          const slots = [...new Set(offsets)]
            .sort((a, b) => a - b)
            .map((o) => now - o)
            .reverse();
          slots.sort((a, b) => a - b);
          const { fire, skip } = decideSlots(slots, now, policy);
          const skipped = skip.map((s) => s.slot);
          expect([...fire, ...skipped].sort((a, b) => a - b)).toEqual(slots);
          expect(fire.filter((s) => skipped.includes(s))).toEqual([]);
          if (policy !== 'latest') {
            for (const s of slots) if (now - s <= MISSED_AFTER_MS) expect(fire).toContain(s);
          } else if (slots.length > 0) {
            expect(fire).toEqual([slots[slots.length - 1]]);
          }
        },
      ),
    );
  });
});
