import type { PlainUsageRecord } from '../kernel/usage-ports.js';

/** One report of usage: an acknowledgement's, or one recorded on its own (the port's plain record, with whose and what work). */
export interface UsageRecordsTable extends PlainUsageRecord {
  agent_id: string;
  message_id: string | null;
  run_id: string | null;
  step_id: string | null;
  plan_id: string | null;
  capability: string | null;
}

/**
 * The records summed per hour and key, kept with each record's insert: totals read these rows,
 * not the records. Days past are merged into one row per day (`hour` its start), so the rows
 * grow with time and keys, not with records. A key part that is absent is '' (so that the key
 * can be unique).
 */
export interface UsageHourlyTable {
  hour: number;
  agent_id: string;
  model: string;
  capability: string;
  plan_id: string;
  count: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost_usd: number;
}

export interface UsageTables {
  usage_records: UsageRecordsTable;
  usage_hourly: UsageHourlyTable;
  budgets: BudgetsTable;
}

/**
 * A budget over a scope's usage in a period, with what it consumed in its current period
 * (`period_start`) and whether that period warned, exceeded, and pauses its scope until `paused_until`.
 */
export interface BudgetsTable {
  id: string;
  name: string;
  /** 'agent', 'capability', 'plan' or 'global' ('' as scope_value). */
  scope_kind: string;
  scope_value: string;
  period: string;
  time_zone: string;
  limit_cost_usd: number | null;
  limit_tokens: number | null;
  warn_at: number | null;
  action: string;
  period_start: number;
  spent_cost_usd: number;
  spent_tokens: number;
  warned: number;
  exceeded: number;
  /** The end of the period it was exceeded in (pause), until a resume; null: not paused. */
  paused_until: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}
