import type { Body } from '../../../src/client/browser.js';

export type Condition = Body<'alerts.createRule'>['condition'];
export type ConditionType = Condition['type'];

interface Field {
  key: string;
  label: string;
  number?: boolean;
  optional?: boolean;
}

const threshold: Field = { key: 'threshold', label: 'Threshold', number: true };
const agent: Field = { key: 'agent_id', label: 'Agent id (any when empty)', optional: true };

/** Each condition type's fields, in the form's order (the server validates them). */
export const CONDITIONS: Record<ConditionType, { label: string; fields: Field[] }> = {
  event_count: {
    label: 'Event count',
    fields: [
      { key: 'event_type', label: 'Event type (run.failed, run.*, *)' },
      { key: 'window_s', label: 'Window (s)', number: true },
      threshold,
      { key: 'subject', label: 'Subject', optional: true },
      { key: 'plan_id', label: 'Plan id', optional: true },
    ],
  },
  inbox_depth: { label: 'Inbox depth', fields: [agent, threshold] },
  inbox_age: { label: 'Inbox age', fields: [agent, { key: 'older_than_s', label: 'Older than (s)', number: true }] },
  dead_letters: { label: 'Dead letters', fields: [agent, threshold] },
  agent_unhealthy: {
    label: 'Agent unhealthy',
    fields: [agent, { key: 'capability', label: 'Capability', optional: true }, { key: 'for_s', label: 'For (s)', number: true }],
  },
  approval_waiting: {
    label: 'Approval waiting',
    fields: [
      { key: 'plan_id', label: 'Plan id', optional: true },
      { key: 'older_than_s', label: 'Older than (s)', number: true },
    ],
  },
  routine_failures: {
    label: 'Routine failures',
    fields: [
      { key: 'routine_id', label: 'Routine id (any when empty)', optional: true },
      { ...threshold, label: 'Failures in a row' },
    ],
  },
  budget: {
    label: 'Budget',
    fields: [
      { key: 'budget_id', label: 'Budget id (any when empty)', optional: true },
      { key: 'fraction', label: 'Fraction of the limit (1 = the limit)', number: true, optional: true },
    ],
  },
};

/** The condition the form's values make: empty optional fields left out, numbers as numbers. */
export function conditionOf(type: ConditionType, values: Readonly<Record<string, string>>): Condition {
  const condition: Record<string, unknown> = { type };
  for (const field of CONDITIONS[type].fields) {
    const value = (values[field.key] ?? '').trim();
    if (value === '' && field.optional) continue;
    condition[field.key] = field.number ? Number(value) : value;
  }
  return condition as Condition;
}

/** A condition in a line: its type and its fields. */
export function conditionText(condition: Condition): string {
  const { type, ...fields } = condition as Record<string, unknown> & { type: ConditionType };
  const parts = Object.entries(fields).map(([key, value]) => `${key} ${String(value)}`);
  return `${CONDITIONS[type].label}: ${parts.join(', ')}`;
}
