import type { Generated } from 'kysely';

export type RunStatus = 'queued' | 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';
export type StepStatus = 'pending' | 'running' | 'waiting' | 'completed' | 'failed' | 'skipped' | 'cancelled';

export interface PlansTable {
  id: string;
  alias: string;
  version: number;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface PlanVersionsTable {
  plan_id: string;
  version: number;
  alias: string;
  /** JSON: {description, steps, output}. */
  definition: string;
  created_by: string;
  created_at: number;
}

export interface RunsTable {
  id: string;
  plan_id: string;
  plan_version: number;
  definition: string;
  status: RunStatus;
  input: string;
  event: string | null;
  output: string | null;
  error: string | null;
  adaptive: string | null;
  revisions: string;
  parent_run_id: string | null;
  parent_step_id: string | null;
  depth: number;
  created_by: string;
  wake_at: number | null;
  revision: string;
  started_at: number;
  completed_at: number | null;
  updated_at: number;
  /** W3C trace context of the run's `invoke_workflow` span: timers and dead letters continue it. */
  traceparent: string | null;
  /** Days the run is kept once finished, from its plan version; null: the server's setting. */
  retention_days: number | null;
  /** 0–9, higher first: which queued run of a plan starts next. */
  priority: number;
  /** The value of the plan's concurrency key for this run ('' without a key); null: no limit. */
  concurrency_key: string | null;
  /** The value of the plan's rate limit key for this run ('' without a key); null: no limit. */
  rate_key: string | null;
  /** Why a queued run waits: concurrency or rate_limit. */
  blocked_by: RunBlockedBy | null;
  /** When the run left the queue (or started at once): what a rate limit counts. */
  admitted_at: number | null;
  /** The run this one reran (from one of its steps); null for a run started afresh. */
  rerun_of: string | null;
  /** JSON PayloadRef when the output is an artifact (over the inline limit); output is then null. */
  output_ref: string | null;
}

export type RunBlockedBy = 'concurrency' | 'rate_limit';
/** Why a capability step waits for an agent: none is healthy, or a budget paused every one. */
export type StepBlockedBy = 'no_agent' | 'budget';

export interface RunStepsTable {
  run_id: string;
  step_id: string;
  position: number;
  parent_step_id: string | null;
  item_index: number;
  item: string | null;
  status: StepStatus;
  attempt: number;
  agent_id: string | null;
  capability: string | null;
  message_id: string | null;
  child_run_id: string | null;
  input: string | null;
  /** JSON PayloadRef when the input is over the inline payload limit (the step message carries it as input_ref). */
  input_ref: string | null;
  output: string | null;
  /** JSON PayloadRef when the output came as an artifact (answers show it as output_ref). */
  output_ref: string | null;
  error: string | null;
  wake_at: number | null;
  wait_topic: string | null;
  detail: string;
  started_at: number | null;
  completed_at: number | null;
}

export interface RunEventsTable {
  seq: Generated<number>;
  run_id: string;
  step_id: string | null;
  type: string;
  detail: string;
  created_at: number;
}

/** The latest checkpoint the agent executing a step saved. */
export interface RunStepCheckpointsTable {
  run_id: string;
  step_id: string;
  /** JSON. */
  state: string;
  attempt: number;
  saved_at: number;
}

/** A line the agent executing a step appended to its log. */
export interface RunStepLogsTable {
  seq: Generated<number>;
  run_id: string;
  step_id: string;
  attempt: number;
  level: string;
  line: string;
  created_at: number;
}

export type TriggerType = 'schedule' | 'event' | 'webhook';

export interface PlanTriggersTable {
  id: string;
  plan_id: string;
  type: TriggerType;
  config: string;
  input: string;
  input_mapping: string | null;
  enabled: number;
  topic: string | null;
  webhook_path: string | null;
  next_fire_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export type FireOutcome = 'started' | 'skipped' | 'filtered' | 'failed';

export interface TriggerFiresTable {
  id: string;
  trigger_id: string;
  scheduled_for: number | null;
  outcome: FireOutcome;
  reason: string | null;
  run_id: string | null;
  created_at: number;
}

/** A reminder or an escalation of a human step's wait, due at `due_at`. */
export interface ApprovalTimersTable {
  id: string;
  run_id: string;
  step_id: string;
  wait_id: string;
  kind: 'remind' | 'escalate';
  due_at: number;
}

/** The coordination tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
/** One tag a run was started with. */
export interface RunTagsTable {
  tag: string;
  run_id: string;
}

/** One key of the metadata a run was started with. */
export interface RunMetadataTable {
  run_id: string;
  key: string;
  value: string;
}

/** The coordination tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface CoordinationTables {
  plans: PlansTable;
  plan_versions: PlanVersionsTable;
  runs: RunsTable;
  run_steps: RunStepsTable;
  run_tags: RunTagsTable;
  run_metadata: RunMetadataTable;
  run_events: RunEventsTable;
  run_step_checkpoints: RunStepCheckpointsTable;
  run_step_logs: RunStepLogsTable;
  plan_triggers: PlanTriggersTable;
  trigger_fires: TriggerFiresTable;
  approval_timers: ApprovalTimersTable;
}
