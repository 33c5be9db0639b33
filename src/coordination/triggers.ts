import { assertMayChange, type Changer } from '../auth/ownership.js';
import { autocommit, type Tx } from '../db/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, MethodNotAllowed, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { AuditTrail, PublishedEvent } from '../kernel/ports.js';
import { topicMatches } from '../kernel/topics.js';
import { decideSlots, Schedule } from '../kernel/cron.js';
import { COORDINATION_CHANGED, type RunEngine } from './engine.js';
import type { CurrentPlan, PlanStore } from './plan-store.js';
import type { StartRun } from './run-state.js';
import { checkTrigger, nextFire, webhookKey, type TriggerConfig, type TriggerInput, type TriggerPatch } from './trigger-config.js';
import type { FireRow, TriggerRow, TriggerStore, TriggerView } from './trigger-store.js';
import type { FireOutcome, TriggerType } from './tables.js';
import { render } from './templates.js';
import { isJsonObject } from '../kernel/json.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import { ExpressionError, type Expressions } from '../kernel/expression-pool.js';

/** An enabled event trigger as kept between publishes: its row with what each event needs made once. */
interface EventTrigger {
  row: TriggerRow;
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
/** Event triggers are re-read at least this often even without a change notification. */
const EVENT_TRIGGERS_TTL_MS = 5000;
/** Published topics whose matching triggers are kept (per reading of the triggers). */
const MATCHED_TOPICS = 1000;
/** Events whose runs start in one transaction at most. */
const EVENT_BATCH = 100;

export interface Trigger {
  id: string;
  plan_id: string;
  type: TriggerType;
  config: TriggerConfig;
  input: Record<string, unknown>;
  input_mapping: Record<string, unknown> | null;
  enabled: boolean;
  next_fire_at: string | null;
  last_fired_at: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface Fire {
  id: string;
  trigger_id: string;
  scheduled_for: string | null;
  outcome: FireOutcome;
  reason: string | null;
  run_id: string | null;
  at: string;
}

function toTrigger(row: TriggerView): Trigger {
  return {
    id: row.id,
    plan_id: row.plan_id,
    type: row.type,
    config: JSON.parse(row.config) as TriggerConfig,
    input: JSON.parse(row.input) as Record<string, unknown>,
    input_mapping: row.input_mapping === null ? null : (JSON.parse(row.input_mapping) as Record<string, unknown>),
    enabled: row.enabled === 1,
    next_fire_at: iso(row.next_fire_at),
    last_fired_at: iso(row.last_fired_at),
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function toFire(row: FireRow): Fire {
  return {
    id: row.id,
    trigger_id: row.trigger_id,
    scheduled_for: iso(row.scheduled_for),
    outcome: row.outcome,
    reason: row.reason,
    run_id: row.run_id,
    at: iso(row.created_at),
  };
}

function toEventTrigger(row: TriggerRow): EventTrigger {
  const { filter } = JSON.parse(row.config) as TriggerConfig;
  return {
    row,
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
 * Triggers start runs of a plan: on a cron schedule (through a fire ledger, like routines), on
 * every matching published event, or on a call to their webhook path.
 */
export class TriggersService {
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
      plans: PlanStore;
      engine: RunEngine;
      clock: Clock;
      notifier: Notifier;
      expressions: Expressions;
      audit: AuditTrail;
    },
  ) {}

  private get store() {
    return this.deps.triggers;
  }

  /** Triggers changed (here or on another node): read them again on the next event. */
  invalidate(): void {
    this.eventTriggers = null;
  }

  private async changed(): Promise<void> {
    this.invalidate();
    await this.deps.notifier.notify(COORDINATION_CHANGED);
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

  private async unique<T>(work: () => Promise<T>, path: string | undefined): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (this.store.isUniqueViolation(err)) throw new Conflict(`Another trigger already uses the webhook path '${path}'`);
      throw err;
    }
  }

  async create(input: TriggerInput, actor: string): Promise<Trigger> {
    const plan = await this.deps.plans.findPlan(autocommit, input.plan_id);
    if (!plan) throw new NotFound('Plan', input.plan_id);
    const config: TriggerConfig = input.type === 'webhook' ? { method: 'POST', ...input.config } : input.config;
    checkTrigger(input.type, config, input.input_mapping);
    const now = this.deps.clock.now();
    const row: TriggerRow = {
      id: newId('trg', now),
      plan_id: plan.id,
      type: input.type,
      config: JSON.stringify(config),
      input: JSON.stringify(input.input ?? {}),
      input_mapping: input.input_mapping ? JSON.stringify(input.input_mapping) : null,
      enabled: input.enabled === false ? 0 : 1,
      topic: input.type === 'event' ? config.topic! : null,
      webhook_path: input.type === 'webhook' ? webhookKey(config.path!) : null,
      next_fire_at: null,
      created_by: actor,
      created_at: now,
      updated_at: now,
    };
    row.next_fire_at = nextFire(row, now);
    await this.unique(
      () =>
        this.store.inTransaction(async (tx) => {
          await this.deps.audit.record(tx, { action: 'trigger.create', resource: { type: 'trigger', id: row.id } });
          await this.store.insertTrigger(tx, row);
        }),
      config.path,
    );
    await this.changed();
    return toTrigger({ ...row, last_fired_at: null });
  }

  private async row(tx: Tx, id: string): Promise<TriggerView> {
    const row = await this.store.findTrigger(tx, id);
    if (!row) throw new NotFound('Trigger', id);
    return row;
  }

  async get(id: string): Promise<Trigger> {
    return toTrigger(await this.row(autocommit, id));
  }

  async list(planId: string | undefined, window: Page): Promise<Paged<Trigger>> {
    const resolved = planId === undefined ? undefined : ((await this.deps.plans.findPlan(autocommit, planId))?.id ?? planId);
    const page = await this.store.listTriggers(autocommit, resolved, window);
    return { items: page.items.map(toTrigger), total: page.total };
  }

  /** The trigger `changer` is about to change: 404 unknown, 403 unless it created it or acts for the platform. */
  private async changeable(id: string, changer: Changer): Promise<TriggerView> {
    const row = await this.row(autocommit, id);
    // created_by never changes, so no lock is needed between this check and the write.
    assertMayChange(changer, { type: 'trigger', id, createdBy: row.created_by });
    return row;
  }

  async update(id: string, patch: TriggerPatch, changer: Changer): Promise<Trigger> {
    const now = this.deps.clock.now();
    const current = await this.changeable(id, changer);
    const config: TriggerConfig = patch.config ?? (JSON.parse(current.config) as TriggerConfig);
    const mapping =
      patch.input_mapping !== undefined ? patch.input_mapping : current.input_mapping === null ? null : JSON.parse(current.input_mapping);
    checkTrigger(current.type, current.type === 'webhook' ? { method: 'POST', ...config } : config, mapping);
    const next: TriggerView = {
      ...current,
      config: JSON.stringify(current.type === 'webhook' ? { method: 'POST', ...config } : config),
      ...(patch.input !== undefined && { input: JSON.stringify(patch.input) }),
      input_mapping: mapping === null ? null : JSON.stringify(mapping),
      ...(patch.enabled !== undefined && { enabled: patch.enabled ? 1 : 0 }),
      topic: current.type === 'event' ? config.topic! : null,
      webhook_path: current.type === 'webhook' ? webhookKey(config.path!) : null,
      updated_at: now,
    };
    // A new schedule or a resume starts from now: nothing missed while paused fires.
    if (next.config !== current.config || next.enabled !== current.enabled) next.next_fire_at = nextFire(next, now);
    const { id: _id, last_fired_at: _last, ...changes } = next;
    await this.unique(
      () =>
        this.store.inTransaction(async (tx) => {
          await this.deps.audit.record(tx, { action: 'trigger.update', resource: { type: 'trigger', id } });
          await this.store.updateTrigger(tx, id, changes);
        }),
      config.path,
    );
    await this.changed();
    return toTrigger(next);
  }

  async delete(id: string, changer: Changer): Promise<void> {
    await this.changeable(id, changer);
    await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'trigger.delete', resource: { type: 'trigger', id } });
      if (!(await this.store.deleteTrigger(tx, id))) throw new NotFound('Trigger', id);
    });
    await this.changed();
  }

  async fires(id: string, window: Page): Promise<Paged<Fire>> {
    await this.row(autocommit, id);
    const page = await this.store.listFires(autocommit, id, window);
    return { items: page.items.map(toFire), total: page.total };
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

  nextScheduleAt(): Promise<number | null> {
    return this.store.nextScheduleAt(autocommit);
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
  async onEvent(event: PublishedEvent): Promise<number> {
    const triggers = await this.matchingEventTriggers(event.topic);
    if (triggers.length === 0) return 0;
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
  async invokeWebhook(method: string, path: string, body: unknown, query: Record<string, unknown>): Promise<{ run_id: string }> {
    const trigger = await this.store.findTriggerByPath(autocommit, webhookKey(path));
    if (!trigger || trigger.type !== 'webhook') throw new NotFound('Webhook', path);
    const expected = (JSON.parse(trigger.config) as TriggerConfig).method ?? 'POST';
    if (method !== expected) throw new MethodNotAllowed(`Webhook '${path}' accepts ${expected}, not ${method}`, [expected]);
    if (trigger.enabled !== 1) throw new Conflict(`The trigger of webhook '${path}' is disabled`);
    const now = this.deps.clock.now();
    const event: Record<string, unknown> = { ...query, ...(isJsonObject(body) ? body : body === undefined ? {} : { body }) };
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'trigger.fire', resource: { type: 'trigger', id: trigger.id } });
      const outcome = await this.startRun(tx, trigger, event);
      if ('failed' in outcome) throw new Conflict(outcome.failed);
      await this.store.insertEventFires(tx, [this.fire(trigger, now, 'started', { run_id: outcome.runId })]);
      return { run_id: outcome.runId };
    });
  }
}
