import { assertMayChange, type Changer } from '../auth/ownership.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditTrail } from '../kernel/ports.js';
import { COORDINATION_CHANGED } from './engine.js';
import type { PlanStore } from './plan-store.js';
import { checkTrigger, nextFire, webhookKey, type TriggerConfig, type TriggerInput, type TriggerPatch } from './trigger-config.js';
import type { TriggerFiring } from './trigger-firing.js';
import type { FireRow, TriggerRow, TriggerStore, TriggerView } from './trigger-store.js';
import type { FireOutcome, TriggerType } from './tables.js';

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

/**
 * Triggers start runs of a plan: on a cron schedule, on every matching published event, or on a
 * call to their webhook path. This keeps them (create, read, change, delete, their fires); what
 * they start is `TriggerFiring` (trigger-firing.ts).
 */
export class TriggersService {
  constructor(
    private readonly deps: {
      triggers: TriggerStore;
      plans: PlanStore;
      clock: Clock;
      notifier: Notifier;
      audit: AuditTrail;
      /** Re-reads the triggers on the next event after a change here. */
      firing: TriggerFiring;
    },
  ) {}

  private get store() {
    return this.deps.triggers;
  }

  private async changed(): Promise<void> {
    this.deps.firing.invalidate();
    await this.deps.notifier.notify(COORDINATION_CHANGED);
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
    return mapPage(page, toTrigger);
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
    return mapPage(page, toFire);
  }
}
