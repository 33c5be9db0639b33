/** One report of usage: an acknowledgement's, or one recorded on its own. */
export interface UsageRecordsTable {
  id: string;
  agent_id: string;
  model: string;
  provider: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost_usd: number;
  message_id: string | null;
  run_id: string | null;
  step_id: string | null;
  plan_id: string | null;
  capability: string | null;
  recorded_at: number;
}

/**
 * The records summed per hour and key, kept with each record's insert: totals read these rows,
 * never the records. A key part that is absent is '' (so that the key can be unique).
 */
export interface UsageHourlyTable {
  hour: number;
  agent_id: string;
  model: string;
  capability: string;
  plan_id: string;
  run_id: string;
  count: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost_usd: number;
}

export interface UsageTables {
  usage_records: UsageRecordsTable;
  usage_hourly: UsageHourlyTable;
}
