/**
 * What a trigger is made of and what makes it valid: its config by type (a cron schedule, an
 * event topic and filter, a webhook path and method), its input mapping, and when a schedule fires next.
 */

import { cronProblem, isValidTimeZone, Schedule } from '../kernel/cron.js';
import { InvalidRequest, type FieldProblem } from '../kernel/errors.js';
import { expressionProblem } from '../kernel/expression-check.js';
import { topicProblem } from '../kernel/topics.js';
import type { TriggerType } from './tables.js';
import { collectReferences } from './templates.js';
import type { TriggerRow } from './trigger-store.js';
import type { Debounce } from '../debounce/store.js';

export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type WebhookMethod = (typeof WEBHOOK_METHODS)[number];
const WEBHOOK_PATH = /^\/?[A-Za-z0-9][A-Za-z0-9._~-]*(\/[A-Za-z0-9._~-]+)*$/;

/**
 * A webhook path as it is stored and looked up: without the leading slash people often write
 * (`/hooks/github`), so it is one path and one match however it was written. `config.path`
 * keeps what was given.
 */
export const webhookKey = (path: string) => (path.startsWith('/') ? path.slice(1) : path);

export interface TriggerConfig {
  cron?: string;
  timezone?: string;
  topic?: string;
  filter?: string;
  path?: string;
  method?: WebhookMethod;
  debounce?: Debounce;
}

export interface TriggerInput {
  plan_id: string;
  type: TriggerType;
  config: TriggerConfig;
  input?: Record<string, unknown>;
  input_mapping?: Record<string, unknown>;
  enabled?: boolean;
}

export interface TriggerPatch {
  config?: TriggerConfig;
  input?: Record<string, unknown>;
  /** null removes the mapping. */
  input_mapping?: Record<string, unknown> | null;
  enabled?: boolean;
}

/** What a trigger's type needs in `config`, and that `input_mapping` reads only `event.*`. */
function problems(type: TriggerType, config: TriggerConfig, mapping: Record<string, unknown> | undefined | null): FieldProblem[] {
  const found: FieldProblem[] = [];
  const problem = (field: string, message: string) => found.push({ field, message });
  const allowed: Record<TriggerType, (keyof TriggerConfig)[]> = {
    schedule: ['cron', 'timezone'],
    event: ['topic', 'filter', 'debounce'],
    webhook: ['path', 'method', 'debounce'],
  };
  for (const key of Object.keys(config) as (keyof TriggerConfig)[]) {
    if (!allowed[type].includes(key)) problem(`config.${key}`, `is not used by ${type} triggers (they take ${allowed[type].join(', ')})`);
  }
  if (type === 'schedule') {
    const zone = config.timezone ?? 'UTC';
    if (!isValidTimeZone(zone)) problem('config.timezone', `'${zone}' is not an IANA time zone`);
    else if (config.cron === undefined) problem('config.cron', 'is required for schedule triggers');
    else {
      const cron = cronProblem(config.cron, zone);
      if (cron) problem('config.cron', cron);
    }
  }
  if (type === 'event') {
    if (config.topic === undefined) problem('config.topic', 'is required for event triggers');
    else {
      const topic = topicProblem(config.topic, true);
      if (topic) problem('config.topic', topic);
    }
    if (config.filter !== undefined) {
      const found = expressionProblem(config.filter);
      if (found) problem('config.filter', found);
    }
  }
  if (type === 'webhook') {
    if (config.path === undefined) problem('config.path', 'is required for webhook triggers');
    else if (!WEBHOOK_PATH.test(config.path) || config.path.split('/').some((s) => s === '.' || s === '..')) {
      problem('config.path', "is segments of letters, digits and '._~-' separated by '/', e.g. 'github/push' or '/github/push'");
    }
  }
  /** Templates of a trigger read only the event. */
  const eventOnly = (field: string, value: unknown, what: string) => {
    for (const reference of collectReferences(value)) {
      if (typeof reference === 'string') problem(field, reference);
      else if (reference.root !== 'event') problem(field, `'{{${reference.expression}}}': ${what} reads only event.*`);
    }
  };
  if (config.debounce?.key !== undefined) eventOnly('config.debounce.key', config.debounce.key, 'a debounce key');
  if (mapping) {
    if (type === 'schedule') problem('input_mapping', 'schedule triggers have no event; use input');
    eventOnly('input_mapping', mapping, "a trigger's mapping");
  }
  return found;
}

/** Refuses a trigger whose config or mapping does not fit its type, naming every field wrong. */
export function checkTrigger(type: TriggerType, config: TriggerConfig, mapping: Record<string, unknown> | null | undefined): void {
  const found = problems(type, config, mapping);
  if (found.length > 0) throw new InvalidRequest(`The trigger is invalid: ${found[0]!.field}: ${found[0]!.message}`, found);
}

/** When a schedule trigger fires next after `after` (null: not an enabled schedule). */
export function nextFire(row: Pick<TriggerRow, 'type' | 'config' | 'enabled'>, after: number): number | null {
  if (row.type !== 'schedule' || row.enabled !== 1) return null;
  const config = JSON.parse(row.config) as TriggerConfig;
  return new Schedule(config.cron!, config.timezone ?? 'UTC').next(after);
}
