import { Cron } from 'croner';
import { BoundedMap } from './bounded-map.js';

/**
 * Fire-time arithmetic for cron routines and schedule triggers: parsing (5 fields, optional
 * seconds field, `@hourly`-style nicknames), IANA zones, DST-correct next times (croner), and
 * the catch-up policy that decides which missed slots fire. Pure: no clock, no database.
 */

export type CatchUp = 'none' | 'latest' | 'all';

/** A slot older than this when the scheduler sees it counts as missed (the server was down or behind). */
export const MISSED_AFTER_MS = 60_000;
/** At most this many missed slots are fired (`all`) or recorded as skipped, per pass. */
export const MAX_CATCH_UP_SLOTS = 100;

// Zones that Intl accepted (a finite set of IANA names): asking Intl costs ~25 µs a time.
const validZones = new Set<string>();

export function isValidTimeZone(zone: string): boolean {
  if (validZones.has(zone)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
  } catch {
    return false;
  }
  if (validZones.size < 10_000) validZones.add(zone);
  return true;
}

/** Returns a message saying what is wrong with the expression, or null when it parses. */
export function cronProblem(expression: string, timezone = 'UTC'): string | null {
  if (expression.trim() === '') return 'must not be empty';
  try {
    // Parsed through the shared cache: the routine being validated is about to use it.
    if (Schedule.of(expression, timezone).next(0) === null) return 'never fires';
    return null;
  } catch (err) {
    return err instanceof Error ? err.message.replace(/^CronPattern: /, '') : 'is not a valid cron expression';
  }
}

const parsed = new BoundedMap<string, Schedule>(5000);

export class Schedule {
  private readonly cron: Cron;
  private readonly answers = new BoundedMap<number, number | null>(64);

  constructor(expression: string, timezone = 'UTC') {
    this.cron = new Cron(expression, { timezone, paused: true });
  }

  /** A shared instance per expression and zone (parsing is the costly part; next() keeps no state). */
  static of(expression: string, timezone = 'UTC'): Schedule {
    return parsed.getOrCreate(`${timezone} ${expression}`, () => new Schedule(expression, timezone));
  }

  /**
   * The first fire time strictly after `afterMs`, or null if there is none. Recent answers are
   * kept: a scheduler pass asks the same question for every routine due in the same slot, and
   * one answer costs ~50 µs.
   */
  next(afterMs: number): number | null {
    return this.answers.getOrCreate(afterMs, () => this.cron.nextRun(new Date(afterMs))?.getTime() ?? null);
  }

  /** The next `count` fire times strictly after `afterMs`. */
  upcoming(afterMs: number, count: number): number[] {
    const times: number[] = [];
    let cursor = afterMs;
    while (times.length < count) {
      const next = this.next(cursor);
      if (next === null) break;
      times.push(next);
      cursor = next;
    }
    return times;
  }

  /**
   * The most recent slots (at most `max`) from `firstDue` (itself a slot) up to and including
   * `now`. After a long outage a dense schedule has millions of missed slots; only the recent
   * ones matter, so the scan widens its window (1 min, 1 h, 1 day, 30 days, everything) until
   * it has enough, instead of walking from `firstDue`.
   */
  dueSlots(firstDue: number, now: number, max = MAX_CATCH_UP_SLOTS + 1): number[] {
    for (const window of [60_000, 3_600_000, 86_400_000, 30 * 86_400_000, Number.POSITIVE_INFINITY]) {
      const start = Math.max(firstDue, now - window);
      const slots: number[] = [];
      let slot: number | null = start === firstDue ? firstDue : this.next(start - 1);
      while (slot !== null && slot <= now) {
        slots.push(slot);
        slot = this.next(slot);
      }
      if (slots.length >= max || start === firstDue) return slots.slice(-max);
    }
    return [];
  }
}

export interface SlotDecision {
  fire: number[];
  skip: { slot: number; reason: string }[];
}

/**
 * Splits due slots into those to fire and those to record as skipped. A slot is "missed" when
 * it is more than MISSED_AFTER_MS old; on-time slots always fire. `latest` fires only the most
 * recent slot, `all` fires every slot, `none` fires only on-time slots.
 */
export function decideSlots(slots: number[], now: number, policy: CatchUp): SlotDecision {
  const missed = slots.filter((s) => now - s > MISSED_AFTER_MS);
  const onTime = slots.filter((s) => now - s <= MISSED_AFTER_MS);
  if (policy === 'all') return { fire: slots, skip: [] };
  if (policy === 'none') return { fire: onTime, skip: missed.map((slot) => ({ slot, reason: 'missed (catch_up: none)' })) };
  const latest = slots[slots.length - 1];
  if (latest === undefined) return { fire: [], skip: [] };
  return {
    fire: [latest],
    skip: slots.slice(0, -1).map((slot) => ({ slot, reason: 'superseded by a later slot (catch_up: latest)' })),
  };
}
