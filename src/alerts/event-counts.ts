import { autocommit } from '../kernel/tx.js';
import type { CountedEvent, EventCountFilter, SignalsStore } from './signals-store.js';

/** Events one pass reads at most to move its counts; past this many it counts each window whole. */
const MAX_EVENTS_PER_PASS = 50_000;
/** Counts are recounted whole this often, so a window whose old events retention deleted cannot drift. */
const RECOUNT_EVERY_MS = 10 * 60_000;
/** A pass this long after the last (another node led meanwhile, or none ran) counts whole. */
const MAX_GAP_MS = 60_000;

/** An event_count rule's window, as a filter without its start: what a count is kept for. */
export interface CountedWindow {
  id: string;
  filter: Omit<EventCountFilter, 'since' | 'until'>;
  windowMs: number;
}

interface Kept {
  key: string;
  value: number;
}

function matches(filter: CountedWindow['filter'], event: CountedEvent): boolean {
  return (
    (filter.subject === undefined || event.subject === filter.subject) && (filter.plan_id === undefined || event.plan_id === filter.plan_id)
  );
}

/** How many of `events` (grouped by type) a window's filter matches, created in [since, until). */
function tally(window: CountedWindow, byType: Map<string, CountedEvent[]>, all: CountedEvent[], since: number, until = Infinity): number {
  const candidates = window.filter.types === null ? [all] : window.filter.types.map((type) => byType.get(type) ?? []);
  let n = 0;
  for (const events of candidates)
    for (const event of events) if (event.created_at >= since && event.created_at < until && matches(window.filter, event)) n++;
  return n;
}

function grouped(events: CountedEvent[]): Map<string, CountedEvent[]> {
  const byType = new Map<string, CountedEvent[]>();
  for (const event of events) {
    const same = byType.get(event.type);
    if (same) same.push(event);
    else byType.set(event.type, [event]);
  }
  return byType;
}

/**
 * The event_count rules' counts, kept between passes and moved by what entered and left each
 * window since the last: the events appended since (by seq) and those whose time left it, so a
 * pass reads the log's new events once, not every window's history. A rule first seen, a long
 * gap, a pass over too many events, or every RECOUNT_EVERY_MS, counts each window whole.
 */
export class EventCounts {
  private kept = new Map<string, Kept>();
  /** The last pass: its time and the log's last position it counted. */
  private last = { at: 0, seq: 0, recountedAt: 0 };

  constructor(
    private readonly store: SignalsStore,
    /** A log position at or before every event created at `since` or later. */
    private readonly positionBefore: (since: number) => number,
  ) {}

  async count(windows: readonly CountedWindow[], now: number): Promise<Map<string, number>> {
    const seq = await this.store.lastEventSeq(autocommit);
    const { at, recountedAt } = this.last;
    const whole = now - recountedAt >= RECOUNT_EVERY_MS || now - at > MAX_GAP_MS || now < at || seq < this.last.seq;
    const moved = whole ? null : await this.moved(windows, now, seq);
    const counts = moved ?? new Map<string, number>();
    const unknown = windows.filter((w) => !counts.has(w.id));
    if (unknown.length > 0) {
      const filters = unknown.map((w) => ({ ...w.filter, since: now - w.windowMs }));
      const values = await this.store.countEvents(autocommit, filters, this.positionBefore(Math.min(...filters.map((f) => f.since))), seq);
      unknown.forEach((w, i) => counts.set(w.id, values[i]!));
    }
    this.kept = new Map(windows.map((w) => [w.id, { key: keyOf(w), value: counts.get(w.id)! }]));
    this.last = { at: now, seq, recountedAt: moved === null ? now : recountedAt };
    return counts;
  }

  /** The kept counts moved to `now` (rules not kept, or changed, left out); null when too many events moved. */
  private async moved(windows: readonly CountedWindow[], now: number, seq: number): Promise<Map<string, number> | null> {
    const known = windows.filter((w) => this.kept.get(w.id)?.key === keyOf(w));
    const counts = new Map<string, number>();
    if (known.length === 0) return counts;
    const withPlan = known.some((w) => w.filter.plan_id !== undefined);
    const { at, seq: lastSeq } = this.last;
    const since = Math.min(...known.map((w) => now - w.windowMs));
    const entered = await this.store.eventsBetween(autocommit, { afterSeq: lastSeq, upToSeq: seq, since }, withPlan, MAX_EVENTS_PER_PASS);
    // What left a window: created from its start at the last pass to its start now, counted then.
    const leftSince = Math.min(...known.map((w) => at - w.windowMs));
    const left = await this.store.eventsBetween(
      autocommit,
      {
        afterSeq: this.positionBefore(leftSince),
        upToSeq: lastSeq,
        since: leftSince,
        until: Math.max(...known.map((w) => now - w.windowMs)),
      },
      withPlan,
      MAX_EVENTS_PER_PASS,
    );
    if (entered.length >= MAX_EVENTS_PER_PASS || left.length >= MAX_EVENTS_PER_PASS) return null;
    const [enteredByType, leftByType] = [grouped(entered), grouped(left)];
    for (const w of known) {
      const value =
        this.kept.get(w.id)!.value +
        tally(w, enteredByType, entered, now - w.windowMs) -
        tally(w, leftByType, left, at - w.windowMs, now - w.windowMs);
      counts.set(w.id, value);
    }
    return counts;
  }
}

function keyOf(window: CountedWindow): string {
  return JSON.stringify([window.filter.types, window.filter.subject, window.filter.plan_id, window.windowMs]);
}
