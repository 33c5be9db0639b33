import type { Logger } from 'pino';
import { autocommit, type Tx } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import { newId } from '../kernel/ids.js';
import { SYSTEM_ACTOR, type EventLog, type NodeRegistry, type NotificationChannels, type NotificationSeverity } from '../kernel/ports.js';
import type { ConditionReader, Measure } from './conditions.js';
import type { Condition } from './schemas.js';
import type { AlertRow, AlertsStore, RuleRow } from './store.js';

export interface EvaluatorDeps {
  store: AlertsStore;
  reader: ConditionReader;
  clock: Clock;
  channels: NotificationChannels;
  events: EventLog;
  nodes: NodeRegistry;
  publicUrl: () => string;
  logger: Logger;
}

type Transition = 'fired' | 'resolved' | 'repeated';

const parsed = (rule: RuleRow) => JSON.parse(rule.condition) as Condition;
const silenced = (rule: RuleRow, now: number) => rule.silenced_until !== null && now < rule.silenced_until;

/** Firing and told of, not acknowledged, with a repeat interval that has run out. */
function repeatDue(rule: RuleRow, alert: AlertRow, now: number): boolean {
  if (rule.repeat_interval_s === 0 || alert.acknowledged_at !== null || silenced(rule, now)) return false;
  return now - (alert.notified_at ?? alert.fired_at) >= rule.repeat_interval_s * 1000;
}

/** What the condition measured, in words. */
export function describe(condition: Condition, measure: Pick<Measure, 'value' | 'detail'>): string {
  const { value, detail } = measure;
  const about = detail === null ? '' : ` (${detail})`;
  switch (condition.type) {
    case 'event_count':
      return `${value} ${condition.event_type} events in the last ${condition.window_s} s (threshold ${condition.threshold})`;
    case 'inbox_depth':
      return `${value} messages waiting in the inbox of ${detail ?? 'an agent'} (threshold ${condition.threshold})`;
    case 'inbox_age':
      return `The oldest message in the inbox of ${detail ?? 'an agent'} has waited ${value} s (threshold ${condition.older_than_s} s)`;
    case 'dead_letters':
      return `${value} dead letters kept${about} (threshold ${condition.threshold})`;
    case 'agent_unhealthy':
      return `${value} agent(s) without a heartbeat for over ${condition.for_s} s past the health TTL${about}`;
    case 'approval_waiting':
      return `${value} human step(s) waiting for over ${condition.older_than_s} s${about}`;
    case 'routine_failures':
      return detail === null
        ? `No routine is failing (threshold ${condition.threshold})`
        : `Routine ${detail} failed ${value} times in a row (threshold ${condition.threshold})`;
    case 'budget':
      return `Budget ${detail ?? 'consumption'} at ${value}% of its limit (fires at ${Math.round((condition.fraction ?? 1) * 100)}%)`;
  }
}

/**
 * One evaluation pass: measures every enabled rule (one grouped read per condition type), and
 * only when an alert must fire, resolve or repeat opens a transaction, which re-reads the firing
 * alerts under a lock, so two nodes overlapping while leadership moves tell each transition once.
 * Passes run on the cluster's leader (NodeRegistry.leads).
 */
export class AlertEvaluator {
  constructor(private readonly deps: EvaluatorDeps) {}

  async pass(): Promise<void> {
    if (!(await this.deps.nodes.leads())) return;
    const { store } = this.deps;
    const now = this.deps.clock.now();
    const rules = await store.enabledRules(autocommit);
    const firing = new Map((await store.firingAlerts(autocommit)).map((alert) => [alert.rule_id, alert]));
    const measured = await this.deps.reader.measure(
      rules.map((rule) => ({ id: rule.id, condition: parsed(rule) })),
      now,
    );
    const enabled = new Set(rules.map((rule) => rule.id));
    const due = rules
      .filter((rule) => {
        const alert = firing.get(rule.id);
        return measured.has(rule.id) ? alert === undefined || repeatDue(rule, alert, now) : alert !== undefined;
      })
      .map((rule) => rule.id);
    // Rules disabled while their alert fired: it resolves.
    const disabled = [...firing.keys()].filter((ruleId) => !enabled.has(ruleId));
    if (due.length === 0 && disabled.length === 0) return;
    await store.inTransaction(async (tx) => {
      await store.lockEvaluation(tx);
      const current = new Map((await store.firingAlerts(tx, true)).map((alert) => [alert.rule_id, alert]));
      const fresh = await store.findRules(tx, [...due, ...disabled]);
      for (const rule of fresh.values()) {
        const alert = current.get(rule.id);
        const measure = rule.enabled === 1 ? measured.get(rule.id) : undefined;
        if (measure !== undefined && alert === undefined) await this.fire(tx, rule, measure, now);
        else if (measure !== undefined && alert !== undefined && repeatDue(rule, alert, now))
          await this.tell(tx, rule, alert, 'repeated', now);
        else if (measure === undefined && alert !== undefined) await this.resolve(tx, rule, alert, now);
      }
    });
  }

  private async fire(tx: Tx, rule: RuleRow, measure: Measure, now: number): Promise<void> {
    const alert: AlertRow = {
      id: newId('alt', now),
      rule_id: rule.id,
      state: 'firing',
      severity: rule.severity,
      value: measure.value,
      detail: measure.detail === null ? null : measure.detail.slice(0, 1000),
      fired_at: now,
      resolved_at: null,
      notified_at: null,
      acknowledged_at: null,
      acknowledged_by: null,
    };
    await this.deps.store.insertAlert(tx, alert);
    await this.tell(tx, rule, alert, 'fired', now);
  }

  private async resolve(tx: Tx, rule: RuleRow, alert: AlertRow, now: number): Promise<void> {
    await this.deps.store.updateAlert(tx, alert.id, { state: 'resolved', resolved_at: now });
    await this.tell(tx, rule, { ...alert, state: 'resolved', resolved_at: now }, 'resolved', now);
  }

  /** Notifies the rule's channels (unless silenced) and logs the transition (a repeat is not one). */
  private async tell(tx: Tx, rule: RuleRow, alert: AlertRow, transition: Transition, now: number): Promise<void> {
    const condition = parsed(rule);
    if (!silenced(rule, now)) {
      const ids = JSON.parse(rule.channels) as string[];
      const missing = new Set(await this.deps.channels.missing(tx, ids));
      if (missing.size > 0)
        this.deps.logger.warn({ rule: rule.id, channels: [...missing] }, 'alert rule names deleted notification channels');
      const reachable = ids.filter((id) => !missing.has(id));
      const heading = { fired: 'Firing', repeated: 'Still firing', resolved: 'Resolved' }[transition];
      if (reachable.length > 0)
        await this.deps.channels.notify(tx, reachable, {
          title: `${heading}: ${rule.name}`,
          text:
            transition === 'resolved'
              ? `The condition no longer holds${rule.enabled === 1 ? '' : ' (the rule was disabled)'}; it fired with: ${describe(condition, alert)}`
              : describe(condition, alert),
          severity: (transition === 'resolved' ? 'info' : rule.severity) as NotificationSeverity,
          link: `${this.deps.publicUrl()}/api/v1/alerts/${alert.id}`,
          fields: [
            { name: 'Rule', value: `${rule.name} (${rule.id})` },
            { name: 'Alert', value: alert.id },
            { name: 'Value', value: String(alert.value) },
          ],
        });
      if (transition !== 'resolved') await this.deps.store.updateAlert(tx, alert.id, { notified_at: now });
    }
    if (transition === 'repeated') return;
    await this.deps.events.append(tx, {
      type: transition === 'fired' ? 'alert.fired' : 'alert.resolved',
      subject: alert.id,
      actor: SYSTEM_ACTOR,
      data: {
        alert_id: alert.id,
        rule_id: rule.id,
        rule_name: rule.name,
        severity: rule.severity,
        condition_type: condition.type,
        value: alert.value,
        detail: alert.detail,
      },
      // Alerts tell of every agent's inboxes and health: admins' (and webhooks').
      readers: { agents: [] },
    });
  }
}
