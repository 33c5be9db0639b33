import type { Principal } from '../auth/index.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditTrail, NotificationChannels } from '../kernel/ports.js';
import { expandEventType, type ConditionReader } from './conditions.js';
import { describe } from './evaluator.js';
import type { Alert, Condition, CreateRuleBody, ListAlertsQuery, Preview, Rule, UpdateRuleBody } from './schemas.js';
import type { AlertWithRule, AlertsStore, RuleRow } from './store.js';

/** Rules at most: each is evaluated every pass. */
export const MAX_RULES = 10_000;
/** A preview's event_count history: this many windows, one ending every PREVIEW_EVERY_MS, over the last hour. */
const PREVIEW_WINDOWS = 12;
const PREVIEW_EVERY_MS = 300_000;

export interface AlertsDeps {
  store: AlertsStore;
  clock: Clock;
  audit: AuditTrail;
  channels: NotificationChannels;
  reader: ConditionReader;
}

export function toRule(row: RuleRow): Rule {
  return {
    id: row.id,
    name: row.name,
    condition: JSON.parse(row.condition) as Condition,
    severity: row.severity as Rule['severity'],
    channels: JSON.parse(row.channels) as string[],
    repeat_interval_s: row.repeat_interval_s,
    enabled: row.enabled === 1,
    silenced_until: iso(row.silenced_until),
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function toAlert(row: AlertWithRule): Alert {
  return {
    id: row.id,
    rule_id: row.rule_id,
    rule_name: row.rule_name,
    state: row.state as Alert['state'],
    severity: row.severity as Alert['severity'],
    value: Number(row.value),
    detail: row.detail,
    since: iso(row.fired_at),
    resolved_at: iso(row.resolved_at),
    acknowledged_at: iso(row.acknowledged_at),
    acknowledged_by: row.acknowledged_by,
  };
}

/** What the schema cannot say of a condition. */
function checkCondition(condition: Condition): string {
  if (condition.type === 'event_count' && expandEventType(condition.event_type)?.length === 0) {
    throw InvalidRequest.field('condition.event_type', `matches no event type (e.g. run.failed, run.*, *)`);
  }
  if (condition.type === 'agent_unhealthy' && condition.agent_id !== undefined && condition.capability !== undefined) {
    throw InvalidRequest.field('condition', 'name an agent_id or a capability, not both');
  }
  return JSON.stringify(condition);
}

function silence(until: string | null | undefined): number | null | undefined {
  return until === undefined || until === null ? until : Date.parse(until);
}

/** Alert rules (CRUD), their alerts (list, acknowledge). Evaluation is evaluator.ts. */
export class AlertsService {
  constructor(private readonly deps: AlertsDeps) {}

  async createRule(body: CreateRuleBody, creator: string): Promise<Rule> {
    const now = this.deps.clock.now();
    const row: RuleRow = {
      id: newId('alr', now),
      name: body.name,
      condition_type: body.condition.type,
      condition: checkCondition(body.condition),
      severity: body.severity ?? 'warning',
      channels: JSON.stringify(body.channels),
      repeat_interval_s: body.repeat_interval_s ?? 0,
      enabled: body.enabled === false ? 0 : 1,
      silenced_until: silence(body.silenced_until) ?? null,
      created_by: creator,
      created_at: now,
      updated_at: now,
    };
    return this.deps.store.inTransaction(async (tx) => {
      await this.checkChannels(tx, body.channels);
      if ((await this.deps.store.countRules(tx)) >= MAX_RULES) {
        throw new Conflict(`There are ${MAX_RULES} alert rules already: delete some before adding more`);
      }
      await this.deps.audit.record(tx, { action: 'alert_rule.create', resource: { type: 'alert_rule', id: row.id } });
      await this.deps.store.insertRule(tx, row);
      return toRule(row);
    });
  }

  /** What a condition measures now and, for event_count, what it would have matched over the last hour. */
  async preview(condition: Condition): Promise<Preview> {
    checkCondition(condition);
    const now = this.deps.clock.now();
    const reading = (await this.deps.reader.read([{ id: 'preview', condition }], now)).get('preview')!;
    const history =
      condition.type === 'event_count'
        ? (await this.deps.reader.windows(condition, now, PREVIEW_WINDOWS, PREVIEW_EVERY_MS)).map((w) => ({ ...w, at: iso(w.at) }))
        : null;
    return {
      ...reading,
      summary: describe(condition, reading),
      measured_at: iso(now),
      covers: history === null ? 'now' : 'last_hour',
      history,
    };
  }

  async listRules(window: Page): Promise<Paged<Rule>> {
    const page = await this.deps.store.listRules(autocommit, window);
    return mapPage(page, toRule);
  }

  async getRule(id: string): Promise<Rule> {
    const row = await this.deps.store.findRule(autocommit, id);
    if (!row) throw new NotFound('Alert rule', id);
    return toRule(row);
  }

  async updateRule(id: string, body: UpdateRuleBody): Promise<Rule> {
    return this.deps.store.inTransaction(async (tx) => {
      const row = await this.deps.store.lockRule(tx, id);
      if (!row) throw new NotFound('Alert rule', id);
      const changes: Partial<RuleRow> = { updated_at: this.deps.clock.now() };
      if (body.name !== undefined) changes.name = body.name;
      if (body.condition !== undefined) {
        changes.condition = checkCondition(body.condition);
        changes.condition_type = body.condition.type;
      }
      if (body.severity !== undefined) changes.severity = body.severity;
      if (body.channels !== undefined) {
        await this.checkChannels(tx, body.channels);
        changes.channels = JSON.stringify(body.channels);
      }
      if (body.repeat_interval_s !== undefined) changes.repeat_interval_s = body.repeat_interval_s;
      if (body.enabled !== undefined) changes.enabled = body.enabled ? 1 : 0;
      if (body.silenced_until !== undefined) changes.silenced_until = silence(body.silenced_until);
      await this.deps.audit.record(tx, { action: 'alert_rule.update', resource: { type: 'alert_rule', id } });
      await this.deps.store.updateRule(tx, id, changes);
      return toRule({ ...row, ...changes });
    });
  }

  /** Deletes a rule with its alerts. */
  async removeRule(id: string): Promise<void> {
    await this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'alert_rule.delete', resource: { type: 'alert_rule', id } });
      if (!(await this.deps.store.deleteRule(tx, id))) throw new NotFound('Alert rule', id);
    });
  }

  async listAlerts(principal: Principal, query: ListAlertsQuery, window: Page): Promise<Paged<Alert>> {
    refuseAgents(principal);
    const page = await this.deps.store.listAlerts(
      autocommit,
      {
        ...(query.state !== undefined && { state: query.state }),
        ...(query.rule_id !== undefined && { ruleId: query.rule_id }),
        ...(query.since !== undefined && { since: Date.parse(query.since) }),
      },
      window,
    );
    return mapPage(page, toAlert);
  }

  async getAlert(principal: Principal, id: string): Promise<Alert> {
    refuseAgents(principal);
    const row = await this.deps.store.findAlert(autocommit, id);
    if (!row) throw new NotFound('Alert', id);
    return toAlert(row);
  }

  /** Someone is on it: no more repeats of a firing alert (its resolution is still told). */
  async acknowledge(id: string, principal: Principal): Promise<Alert> {
    return this.deps.store.inTransaction(async (tx) => {
      const row = await this.deps.store.findAlert(tx, id);
      if (!row) throw new NotFound('Alert', id);
      if (row.state !== 'firing') throw new Conflict(`Alert ${id} is resolved: only a firing alert is acknowledged`);
      if (row.acknowledged_at !== null) return toAlert(row);
      const changes = { acknowledged_at: this.deps.clock.now(), acknowledged_by: principal.actor };
      await this.deps.audit.record(tx, { action: 'alert.acknowledge', resource: { type: 'alert', id } });
      await this.deps.store.updateAlert(tx, id, changes);
      return toAlert({ ...row, ...changes });
    });
  }

  /** Firing alerts by rule and severity (the gauge). */
  firingCounts(): Promise<{ rule_id: string; severity: string; n: number }[]> {
    return this.deps.store.firingCounts(autocommit);
  }

  private async checkChannels(tx: Tx, ids: readonly string[]): Promise<void> {
    const missing = await this.deps.channels.missing(tx, ids);
    if (missing.length > 0) throw InvalidRequest.field('channels', `no notification channel ${missing.join(', ')}`);
  }
}

/** Alerts tell of every agent's inboxes and health: they are for people, and agents hear of them through agent channels. */
function refuseAgents(principal: Principal): void {
  if (principal.role === 'agent')
    throw new Forbidden('Alerts are for operators: an agent hears of them through an agent notification channel');
}
