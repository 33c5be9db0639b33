import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, MethodNotAllowed, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { AuditTrail, Publication } from '../kernel/ports.js';
import type { Notifier } from '../kernel/notifier.js';
import { topicMatches } from '../kernel/topics.js';
import { decideSlots, Schedule } from '../kernel/cron.js';
import type { RunEngine } from './engine.js';
import type { CurrentPlan, PlanStore } from './plan-store.js';
import type { StartRun } from './run-state.js';
import { webhookKey, type TriggerConfig } from './trigger-config.js';
import type { FireRow, TriggerRow, TriggerStore } from './trigger-store.js';
import { burstRow, type Debounce, type DebounceStore } from '../debounce/store.js';
import type { FireOutcome } from './tables.js';
import { render } from './templates.js';
import { isJsonObject } from '../kernel/json.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import { ExpressionError, type Expressions } from '../kernel/expression-pool.js';

/** An enabled event trigger as kept between publishes: its row with what each event needs made once. */
interface EventTrigger {
  row: TriggerRow;
  debounce: Debounce | null;
  /** The filter's JSONata expression (one that does not compile fails the fire, as on evaluation). */
  filter: string | null;
  input: Record<string, unknown>;
  mapping: unknown;
}

/** What one published event does: the triggers it starts and those it does not (with why). */
interface EventWork {
  topic: string;
  data: Record<string, unknown>;
  now: number;
  decided: { trigger: EventTrigger; pass: boolean; error?: string }[];
}

const SCHEDULE_BATCH = 100;
/** Wakes the run timer of every node when a debounced trigger's burst begins (its run is due later). */
export const DEBOUNCE_BEGUN = 'coordination:debounce';
/** Event triggers are re-read at least this often even without a change notification. */
const EVENT_TRIGGERS_TTL_MS = 5000;
/** Published topics whose matching triggers are kept (per reading of the triggers). */
const MATCHED_TOPICS = 1000;
/** Events whose runs start in one transaction at most. */
const EVENT_BATCH = 100;

function toEventTrigger(row: TriggerRow): EventTrigger {
  const { filter, debounce } = JSON.parse(row.config) as TriggerConfig;
  return {
    row,
    debounce: debounce ?? null,
    filter: filter ?? null,
    input: JSON.parse(row.input) as Record<string, unknown>,
    mapping: row.input_mapping === null ? null : (JSON.parse(row.input_mapping) as unknown),
  };
}

/** A run of `trigger`'s plan: its fixed input overlaid with its mapping over the event. */
function runSpec(
  trigger: TriggerRow,
  plan: CurrentPlan,
  fixed: Record<string, unknown>,
  mapping: unknown,
  event: Record<string, unknown> | undefined,
): StartRun {
  const mapped = mapping === null ? {} : (render(mapping, { input: {}, steps: {}, event: event ?? {} }) as Record<string, unknown>);
  return {
    planId: plan.id,
    planAlias: plan.alias,
    planVersion: plan.version,
    definition: plan.definition,
    definitionText: plan.text,
    input: { ...fixed, ...mapped },
    event,
    createdBy: `trigger:${trigger.id}`,
  };
}

/**
 * What triggers do: start runs of their plan on a due cron slot (through the fire ledger, like
 * routines), on every matching published event, or on a call to their webhook path. Their
 * creation and changes are `TriggersService` (triggers.ts), which tells this to re-read them.
 */
export class TriggerFiring {
  /**
   * Enabled event triggers and the current versions of their plans, kept between publishes;
   * dropped on any trigger or plan change (any node) and re-read at least every 5 s.
   */
  private eventTriggers: {
    triggers: EventTrigger[];
    at: number;
    plans: Map<string, CurrentPlan>;
    /** The triggers matching a published topic, by topic. */
    matched: BoundedMap<string, EventTrigger[]>;
  } | null = null;
  /** Events waiting for the transaction under way to end; the next one starts all their runs. */
  private pendingEvents: { work: EventWork; resolve: (started: number) => void; reject: (err: unknown) => void }[] = [];
  private startingEvents = false;

  constructor(
    private readonly deps: {
      triggers: TriggerStore;
      debounces: DebounceStore;
      plans: PlanStore;
      engine: RunEngine;
      clock: Clock;
      expressions: Expressions;
      audit: AuditTrail;
      notifier: Notifier;
    },
  ) {}

  private get store() {
    return this.deps.triggers;
  }

  /** Triggers changed (here or on another node): read them again on the next event. */
  invalidate(): void {
    this.eventTriggers = null;
  }

  /** The enabled event triggers whose topic pattern matches `topic`. */
  private async matchingEventTriggers(topic: string): Promise<EventTrigger[]> {
    const now = this.deps.clock.now();
    let cache = this.eventTriggers;
    if (cache === null || now - cache.at > EVENT_TRIGGERS_TTL_MS) {
      const rows = await this.store.eventTriggers(autocommit);
      cache = { triggers: rows.map(toEventTrigger), at: now, plans: new Map(), matched: new BoundedMap(MATCHED_TOPICS) };
      this.eventTriggers = cache;
    }
    let triggers = cache.matched.get(topic);
    if (triggers === undefined) {
      triggers = cache.triggers.filter((t) => topicMatches(t.row.topic!, topic));
      cache.matched.set(topic, triggers);
    }
    return triggers;
  }

  /** Starts a run of the trigger's plan (newest version) in `tx`; returns its id, or why it could not. */
  private async startRun(
    tx: Tx,
    trigger: TriggerRow,
    event: Record<string, unknown> | undefined,
  ): Promise<{ runId: string } | { failed: string }> {
    const plan = await this.deps.plans.currentPlan(tx, trigger.plan_id);
    if (!plan) return { failed: `plan '${trigger.plan_id}' no longer exists` };
    const fixed = JSON.parse(trigger.input) as Record<string, unknown>;
    const mapping = trigger.input_mapping === null ? null : (JSON.parse(trigger.input_mapping) as unknown);
    const run = await this.deps.engine.start(tx, runSpec(trigger, plan, fixed, mapping, event));
    return { runId: run.id };
  }

  private fire(trigger: TriggerRow, now: number, outcome: FireOutcome, extra: Partial<FireRow> = {}): FireRow {
    return {
      id: newId('fire', now),
      trigger_id: trigger.id,
      scheduled_for: null,
      outcome,
      reason: null,
      run_id: null,
      created_at: now,
      ...extra,
    };
  }

  /** Fires every due schedule slot (catch-up `latest`): one run per slot, recorded in the ledger. */
  async fireDue(): Promise<number> {
    let started = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const { claimed, count } = await this.store.inTransaction(async (tx) => {
        const due = await this.store.claimDueSchedules(tx, now, SCHEDULE_BATCH);
        let count = 0;
        for (const trigger of due) {
          const config = JSON.parse(trigger.config) as TriggerConfig;
          const schedule = new Schedule(config.cron!, config.timezone ?? 'UTC');
          const slots = schedule.dueSlots(trigger.next_fire_at!, now);
          const decision = decideSlots(slots, now, 'latest');
          const rows = [
            ...decision.fire.map((slot) => this.fire(trigger, now, 'started', { scheduled_for: slot })),
            ...decision.skip.map(({ slot, reason }) => this.fire(trigger, now, 'skipped', { scheduled_for: slot, reason })),
          ];
          for (const fire of await this.store.insertFires(tx, rows)) {
            if (fire.outcome !== 'started') continue;
            const outcome = await this.startRun(tx, trigger, { scheduled_for: iso(fire.scheduled_for) });
            if ('runId' in outcome) count++;
            await this.store.updateFire(
              tx,
              fire.id,
              'runId' in outcome ? { run_id: outcome.runId } : { outcome: 'failed', reason: outcome.failed },
            );
          }
          const last = slots[slots.length - 1] ?? trigger.next_fire_at!;
          await this.store.updateTrigger(tx, trigger.id, { next_fire_at: schedule.next(Math.max(now, last)) });
        }
        return { claimed: due.length, count };
      });
      started += count;
      if (claimed < SCHEDULE_BATCH) return started;
    }
  }

  /** When the timer looks next for triggers: a schedule slot or a debounced burst's end. */
  async nextFireAt(): Promise<number | null> {
    const times = [await this.store.nextScheduleAt(autocommit), await this.deps.debounces.nextAt(autocommit)];
    return times.reduce<number | null>((a, b) => (b === null ? a : a === null ? b : Math.min(a, b)), null);
  }

  /** An event of a debounced trigger joins the burst of its key (or begins one: the timers are told). */
  private async debounce(tx: Tx, trigger: TriggerRow, debounce: Debounce, event: Record<string, unknown>, now: number): Promise<void> {
    const key = debounce.key === undefined ? '' : String(render(debounce.key, { input: {}, steps: {}, event }) ?? '');
    const row = burstRow('trigger', trigger.id, debounce, key, event, now);
    if (await this.deps.debounces.join(tx, row)) await this.deps.notifier.notifyIn(tx, DEBOUNCE_BEGUN);
  }

  /** Starts the runs of debounced bursts that are due (each with its last event), recorded in the ledger. */
  async fireDebounced(): Promise<number> {
    let started = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const { taken, count } = await this.store.inTransaction(async (tx) => {
        const due = await this.deps.debounces.takeDue(tx, now, SCHEDULE_BATCH);
        let count = 0;
        for (const burst of due) {
          const trigger = await this.store.findTrigger(tx, burst.owner_id);
          if (!trigger || trigger.enabled !== 1) continue;
          const outcome = await this.startRun(tx, trigger, JSON.parse(burst.event) as Record<string, unknown>);
          if ('runId' in outcome) count++;
          const fire =
            'runId' in outcome
              ? this.fire(trigger, now, 'started', { run_id: outcome.runId })
              : this.fire(trigger, now, 'failed', { reason: outcome.failed });
          await this.store.insertEventFires(tx, [fire]);
        }
        return { taken: due.length, count };
      });
      started += count;
      if (taken < SCHEDULE_BATCH) return started;
    }
  }

  pruneFires(): Promise<void> {
    return this.store.pruneFires(autocommit);
  }

  /**
   * A published event starts a run of every enabled event trigger whose topic matches and whose
   * filter passes; resolves once those runs are committed. Events published while a transaction
   * starts the runs of earlier ones wait for it and then start theirs together, in one
   * transaction (a commit and a few multi-row statements for many runs).
   */
  async onEvent(publication: Publication): Promise<number> {
    const triggers = await this.matchingEventTriggers(publication.topic);
    if (triggers.length === 0) return 0;
    const event = await publication.event();
    const now = this.deps.clock.now();
    const data: Record<string, unknown> = {
      ...(isJsonObject(event.payload) ? event.payload : { payload: event.payload }),
      topic: event.topic,
      published_at: event.published_at,
    };
    // Filters run in the expression pool, at once: a slow one holds up only its own publish.
    const decided = await Promise.all(
      triggers.map(async (trigger): Promise<EventWork['decided'][number]> => {
        if (trigger.filter === null) return { trigger, pass: true };
        try {
          return { trigger, pass: Boolean(await this.deps.expressions.evaluate(trigger.filter, { event: data })) };
        } catch (err) {
          if (!(err instanceof ExpressionError)) throw err;
          return { trigger, pass: false, error: `filter failed: ${err.message}` };
        }
      }),
    );
    const work: EventWork = { topic: event.topic, data, now, decided };
    return new Promise<number>((resolve, reject) => {
      this.pendingEvents.push({ work, resolve, reject });
      if (this.startingEvents) return;
      this.startingEvents = true;
      // On the next turn of the event loop: SQLite statements run synchronously, so a batch
      // started at once would only ever hold this event; the publishes that arrived with it are
      // handled first and join it.
      setImmediate(() => void this.startPendingEvents());
    });
  }

  /** Starts the runs of the waiting events, a batch per transaction, until none waits. */
  private async startPendingEvents(): Promise<void> {
    try {
      while (this.pendingEvents.length > 0) {
        const batch = this.pendingEvents.splice(0, EVENT_BATCH);
        // The plan versions kept with the triggers (dropped with them when a plan changes).
        const plans = this.eventTriggers?.plans ?? new Map<string, CurrentPlan>();
        try {
          const started = await this.store.inTransaction((tx) =>
            this.startEvents(
              tx,
              batch.map((b) => b.work),
              plans,
            ),
          );
          batch.forEach((b, i) => b.resolve(started[i]!));
        } catch (err) {
          if (batch.length === 1) {
            batch[0]!.reject(err);
            continue;
          }
          // One event's failure must not undo the others': each goes again on its own.
          for (const b of batch) {
            try {
              b.resolve((await this.store.inTransaction((tx) => this.startEvents(tx, [b.work], new Map())))[0]!);
            } catch (own) {
              b.reject(own);
            }
          }
        }
      }
    } finally {
      this.startingEvents = false;
    }
  }

  /** Starts the runs of a batch of events in `tx` and records every fire; returns the runs started per event. */
  private async startEvents(tx: Tx, batch: EventWork[], plans: Map<string, CurrentPlan>): Promise<number[]> {
    const fires: FireRow[] = [];
    const specs: StartRun[] = [];
    const startedFires: FireRow[] = [];
    const started = batch.map(() => 0);
    for (const [index, work] of batch.entries()) {
      for (const { trigger, pass, error } of work.decided) {
        const { row } = trigger;
        if (!pass) {
          fires.push(this.fire(row, work.now, error ? 'failed' : 'filtered', { reason: error ?? `filter is false for ${work.topic}` }));
          continue;
        }
        let plan = plans.get(row.plan_id);
        if (plan === undefined) {
          const current = await this.deps.plans.currentPlan(tx, row.plan_id);
          if (current) plans.set(row.plan_id, (plan = current));
        }
        if (!plan) {
          fires.push(this.fire(row, work.now, 'failed', { reason: `plan '${row.plan_id}' no longer exists` }));
          continue;
        }
        if (trigger.debounce) {
          await this.debounce(tx, row, trigger.debounce, work.data, work.now);
          continue;
        }
        const fire = this.fire(row, work.now, 'started');
        fires.push(fire);
        startedFires.push(fire);
        specs.push(runSpec(row, plan, trigger.input, trigger.mapping, work.data));
        started[index]!++;
      }
    }
    const runs = await this.deps.engine.startMany(tx, specs);
    runs.forEach((run, i) => (startedFires[i]!.run_id = run.id));
    await this.store.insertEventFires(tx, fires);
    return started;
  }

  /** `{method} /coordination/hooks/{path}`: the request body and query become `event.*`. */
  async invokeWebhook(method: string, path: string, body: unknown, query: Record<string, unknown>): Promise<{ run_id: string | null }> {
    const trigger = await this.store.findTriggerByPath(autocommit, webhookKey(path));
    if (!trigger || trigger.type !== 'webhook') throw new NotFound('Webhook', path);
    const expected = (JSON.parse(trigger.config) as TriggerConfig).method ?? 'POST';
    if (method !== expected) throw new MethodNotAllowed(`Webhook '${path}' accepts ${expected}, not ${method}`, [expected]);
    if (trigger.enabled !== 1) throw new Conflict(`The trigger of webhook '${path}' is disabled`);
    const now = this.deps.clock.now();
    const event: Record<string, unknown> = { ...query, ...(isJsonObject(body) ? body : body === undefined ? {} : { body }) };
    const { debounce } = JSON.parse(trigger.config) as TriggerConfig;
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'trigger.fire', resource: { type: 'trigger', id: trigger.id } });
      if (debounce) {
        await this.debounce(tx, trigger, debounce, event, now);
        return { run_id: null };
      }
      const outcome = await this.startRun(tx, trigger, event);
      if ('failed' in outcome) throw new Conflict(outcome.failed);
      await this.store.insertEventFires(tx, [this.fire(trigger, now, 'started', { run_id: outcome.runId })]);
      return { run_id: outcome.runId };
    });
  }
}
