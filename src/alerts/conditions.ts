import { autocommit } from '../kernel/tx.js';
import { EVENT_TYPES, type InboxReadings } from '../kernel/ports.js';
import { type BudgetReadings } from '../kernel/usage-ports.js';
import type { Condition, ConditionType } from './schemas.js';
import { EventCounts, type CountedWindow } from './event-counts.js';
import type { EventCountFilter, SignalsStore } from './signals-store.js';

/** What a condition measured: the alert's value, and what it is about. */
export interface Measure {
  value: number;
  detail: string | null;
}

/** A measure and whether the condition holds with it. */
export interface Reading extends Measure {
  holds: boolean;
}

/** An event_count window's reading: its end, its count, whether it reached the threshold. */
export interface WindowReading {
  at: number;
  value: number;
  holds: boolean;
}

export interface RuleCondition {
  id: string;
  condition: Condition;
}

/** How many of the matched things (agents, steps) an alert's detail names. */
const DETAIL_NAMES = 5;
/** Log positions remembered: one per SAMPLE_EVERY_MS, the oldest dropped past this many. */
const MAX_SAMPLES = 20_000;
const SAMPLE_EVERY_MS = 5_000;

/** The concrete event types an `event_type` pattern matches (`run.*`, `*`, an exact type); null for every type. */
export function expandEventType(pattern: string): string[] | null {
  if (pattern === '*') return null;
  if (pattern.endsWith('.*')) {
    const prefix = pattern.slice(0, -1);
    return EVENT_TYPES.filter((type) => type.startsWith(prefix));
  }
  return EVENT_TYPES.filter((type) => type === pattern);
}

function named(things: readonly string[]): string | null {
  if (things.length === 0) return null;
  const shown = things.slice(0, DETAIL_NAMES).join(', ');
  return things.length > DETAIL_NAMES ? `${shown} and ${things.length - DETAIL_NAMES} more` : shown;
}

type Of<T extends ConditionType> = Extract<Condition, { type: T }>;

/** The events an event_count condition counts, wherever its window is. */
function countedEvents(c: Of<'event_count'>): CountedWindow['filter'] {
  return {
    types: expandEventType(c.event_type),
    ...(c.subject !== undefined && { subject: c.subject }),
    ...(c.plan_id !== undefined && { plan_id: c.plan_id }),
  };
}

/** The events an event_count condition counts in its window ending at `at`. */
function eventCountFilter(c: Of<'event_count'>, at: number): EventCountFilter {
  return { ...countedEvents(c), since: at - c.window_s * 1000 };
}

/**
 * Measures every rule's condition with one grouped read per condition type. The event log is
 * read from a remembered position taken before each window's start (its last `seq` at earlier
 * passes), so a window costs the events in it, not the log's history.
 */
export class ConditionReader {
  private readonly samples: { at: number; seq: number }[] = [];
  /** The evaluator's event_count counts, kept between its passes. */
  private readonly counts: EventCounts;

  constructor(
    private readonly store: SignalsStore,
    private readonly readings: { budgets: BudgetReadings; inboxes: InboxReadings },
    private readonly healthTtlMs: number,
  ) {
    this.counts = new EventCounts(store, (since) => this.positionBefore(since));
  }

  /** The rules whose condition holds at `now`, with what it measured: the evaluator's pass, whose event counts are kept for the next. */
  async measure(rules: readonly RuleCondition[], now: number): Promise<Map<string, Measure>> {
    const held = new Map<string, Measure>();
    const readings = await this.readWith(rules, now, async (counted) => {
      const windows = counted.map(({ id, condition }) => ({ id, filter: countedEvents(condition), windowMs: condition.window_s * 1000 }));
      const counts = await this.counts.count(windows, now);
      return counted.map((rule) => counts.get(rule.id)!);
    });
    for (const [id, { holds, value, detail }] of readings) if (holds) held.set(id, { value, detail });
    return held;
  }

  /**
   * An event_count condition's readings for `count` windows ending every `everyMs` up to `now`,
   * oldest first: one statement, from a remembered position before the first window's start.
   */
  async windows(condition: Of<'event_count'>, now: number, count: number, everyMs: number): Promise<WindowReading[]> {
    const ends = Array.from({ length: count }, (_, i) => now - (count - 1 - i) * everyMs);
    const filters = ends.map((at) => ({ ...eventCountFilter(condition, at), until: at }));
    const counts = await this.store.countEvents(autocommit, filters, this.positionBefore(filters[0]!.since));
    return ends.map((at, i) => ({ at, value: counts[i]!, holds: counts[i]! >= condition.threshold }));
  }

  /** Every rule's reading at `now`, holding or not (a condition with nothing to measure reads 0); event counts counted whole. */
  read(rules: readonly RuleCondition[], now: number): Promise<Map<string, Reading>> {
    return this.readWith(rules, now, (counted) => {
      const filters = counted.map(({ condition }) => eventCountFilter(condition, now));
      return this.store.countEvents(autocommit, filters, this.positionBefore(Math.min(...filters.map((f) => f.since))));
    });
  }

  /** The readings, with the event_count conditions' counts (in their order) from `countEvents`. */
  private async readWith(
    rules: readonly RuleCondition[],
    now: number,
    countEvents: (counted: (RuleCondition & { condition: Of<'event_count'> })[]) => Promise<number[]>,
  ): Promise<Map<string, Reading>> {
    const byType = new Map<ConditionType, RuleCondition[]>();
    for (const rule of rules) byType.set(rule.condition.type, [...(byType.get(rule.condition.type) ?? []), rule]);
    const held = new Map<string, Reading>();
    const hold = (id: string, holds: boolean, value: number, detail: string | null) => held.set(id, { holds, value, detail });
    const of = <T extends ConditionType>(type: T) => (byType.get(type) ?? []) as (RuleCondition & { condition: Of<T> })[];

    const counted = of('event_count');
    if (counted.length > 0) {
      const counts = await countEvents(counted);
      counted.forEach((rule, i) => hold(rule.id, counts[i]! >= rule.condition.threshold, counts[i]!, null));
    }
    await this.sample(now);

    const depth = of('inbox_depth');
    const age = of('inbox_age');
    if (depth.length + age.length > 0) {
      const inboxes = await this.readings.inboxes.readyInboxes(now);
      for (const rule of depth) {
        const worst = inboxes
          .filter((i) => rule.condition.agent_id === undefined || i.agent_id === rule.condition.agent_id)
          .reduce<(typeof inboxes)[number] | null>((a, b) => (a === null || b.depth > a.depth ? b : a), null);
        hold(rule.id, worst !== null && worst.depth >= rule.condition.threshold, worst?.depth ?? 0, worst?.agent_id ?? null);
      }
      for (const rule of age) {
        const worst = inboxes
          .filter((i) => rule.condition.agent_id === undefined || i.agent_id === rule.condition.agent_id)
          .reduce<(typeof inboxes)[number] | null>((a, b) => (a === null || b.oldest_at < a.oldest_at ? b : a), null);
        const seconds = worst ? Math.floor((now - worst.oldest_at) / 1000) : 0;
        hold(rule.id, worst !== null && seconds >= rule.condition.older_than_s, seconds, worst?.agent_id ?? null);
      }
    }

    const dead = of('dead_letters');
    if (dead.length > 0) {
      const kept = await this.store.deadLetters(autocommit);
      for (const rule of dead) {
        const mine = kept.filter((k) => rule.condition.agent_id === undefined || k.agent_id === rule.condition.agent_id);
        const total = mine.reduce((sum, k) => sum + k.count, 0);
        hold(rule.id, total >= rule.condition.threshold, total, named(mine.map((k) => k.agent_id)));
      }
    }

    const unhealthy = of('agent_unhealthy');
    if (unhealthy.length > 0) {
      const unhealthySince = (rule: (typeof unhealthy)[number]) => now - this.healthTtlMs - rule.condition.for_s * 1000;
      const capabilities = [...new Set(unhealthy.flatMap((r) => (r.condition.capability === undefined ? [] : [r.condition.capability])))];
      const silent = await this.store.silentAgents(autocommit, Math.max(...unhealthy.map(unhealthySince)), capabilities);
      for (const rule of unhealthy) {
        const { agent_id, capability } = rule.condition;
        const agents = silent
          .filter((a) => a.last_heartbeat_at <= unhealthySince(rule))
          .filter((a) => agent_id === undefined || a.agent_id === agent_id)
          .filter((a) => capability === undefined || a.capabilities.includes(capability))
          .map((a) => a.agent_id);
        hold(rule.id, agents.length > 0, agents.length, named(agents));
      }
    }

    const waiting = of('approval_waiting');
    if (waiting.length > 0) {
      const before = (rule: (typeof waiting)[number]) => now - rule.condition.older_than_s * 1000;
      const steps = await this.store.waitingHumanSteps(autocommit, Math.max(...waiting.map(before)));
      for (const rule of waiting) {
        const mine = steps.filter(
          (s) => s.started_at <= before(rule) && (rule.condition.plan_id === undefined || s.plan_id === rule.condition.plan_id),
        );
        hold(rule.id, mine.length > 0, mine.length, named(mine.map((s) => `${s.run_id}/${s.step_id}`)));
      }
    }

    const budgets = of('budget');
    if (budgets.length > 0) {
      const readings = await this.readings.budgets.consumption();
      for (const rule of budgets) {
        const worst = readings
          .filter((b) => rule.condition.budget_id === undefined || b.budget_id === rule.condition.budget_id)
          .reduce<(typeof readings)[number] | null>((a, b) => (a === null || b.fraction > a.fraction ? b : a), null);
        const fraction = worst?.fraction ?? 0;
        hold(
          rule.id,
          fraction >= (rule.condition.fraction ?? 1),
          Math.round(fraction * 100),
          worst ? `${worst.name} (${worst.budget_id})` : null,
        );
      }
    }

    const failing = of('routine_failures');
    if (failing.length > 0) {
      const streaks = await this.store.failureStreaks(autocommit);
      for (const rule of failing) {
        const worst = streaks
          .filter((s) => rule.condition.routine_id === undefined || s.routine_id === rule.condition.routine_id)
          .reduce<(typeof streaks)[number] | null>((a, b) => (a === null || b.failures > a.failures ? b : a), null);
        hold(rule.id, worst !== null && worst.failures >= rule.condition.threshold, worst?.failures ?? 0, worst?.routine_id ?? null);
      }
    }
    return held;
  }

  /**
   * A log position at or before every event created at `since` or later: the last remembered
   * one taken before `since` (each event at or before it was created before it was taken);
   * 0 (the whole log) when there is none.
   */
  private positionBefore(since: number): number {
    let seq = 0;
    for (const sample of this.samples) {
      if (sample.at >= since) break;
      seq = sample.seq;
    }
    return seq;
  }

  private async sample(now: number): Promise<void> {
    const last = this.samples.at(-1);
    if (last !== undefined && now - last.at < SAMPLE_EVERY_MS) return;
    this.samples.push({ at: now, seq: await this.store.lastEventSeq(autocommit) });
    if (this.samples.length > MAX_SAMPLES) this.samples.shift();
  }
}
