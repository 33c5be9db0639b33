export type TriggerType = 'cron' | 'webhook';
export type ExecutionStatus = 'pending' | 'running' | 'success' | 'failed';
export type ExecutionTrigger = 'cron' | 'webhook' | 'manual';

export interface RoutinesTable {
  id: string;
  name: string;
  description: string | null;
  trigger_type: TriggerType;
  cron_expression: string | null;
  timezone: string;
  target_agent: string;
  payload: string;
  enabled: number;
  catch_up: 'none' | 'latest' | 'all';
  overlap: 'allow' | 'skip';
  timeout_seconds: number;
  webhook_token_hash: string | null;
  /** JSON `{seconds, key?, max_wait_s?}` of a debounced webhook routine (null: none). */
  debounce: string | null;
  next_run_at: number | null;
  last_run_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface RoutineExecutionsTable {
  id: string;
  routine_id: string;
  status: ExecutionStatus;
  trigger: ExecutionTrigger;
  payload: string;
  scheduled_for: number | null;
  message_id: string | null;
  output: string | null;
  deadline_at: number;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
}

export interface RoutineFiresTable {
  id: string;
  routine_id: string;
  scheduled_for: number;
  outcome: 'fired' | 'skipped';
  reason: string | null;
  execution_id: string | null;
  created_at: number;
}

/** The routines tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface RoutinesTables {
  routines: RoutinesTable;
  routine_executions: RoutineExecutionsTable;
  routine_fires: RoutineFiresTable;
}
