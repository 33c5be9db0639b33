/**
 * A plan as saved (its steps by kind) and as the engine follows it (compiled). Imports nothing
 * of the domain: the step kinds (steps/) and everything that reads plans build on it.
 */

/** A plan step as saved (the fields each type uses; see schemas.ts for their meaning). */
export interface StepTemplate {
  type: StepType;
  agent?: string;
  capability?: string;
  strategy?: string;
  input?: Record<string, unknown>;
  timeout_seconds?: number;
  retry?: { max_attempts?: number; backoff_seconds?: number };
  prompt?: string;
  approvers?: string[];
  on_timeout?: 'fail' | 'approve' | 'reject';
  notify?: string[];
  remind_after_s?: number;
  escalate_after_s?: number;
  escalate_to?: string[];
  schema?: Record<string, unknown>;
  expression?: string;
  then?: string | string[];
  else?: string | string[];
  steps?: string[];
  for_each?: unknown;
  max_concurrency?: number;
  seconds?: number;
  until?: string;
  event?: { topic: string; match?: Record<string, unknown> };
  plan_id?: string;
  output?: unknown;
}

export interface StepDefinition extends StepTemplate {
  id: string;
  depends_on?: string[];
  step?: StepTemplate;
}

export interface PlanDefinition {
  description?: string;
  steps: StepDefinition[];
  output?: Record<string, unknown>;
  /** Days its finished runs are kept, instead of the server's setting. */
  retention_days?: number;
  concurrency?: ConcurrencyLimit;
  rate_limit?: RateLimit;
  /** Its runs' priority (0–9, higher first out of the queue) unless a start says otherwise. */
  priority?: number;
}

/** At most `limit` active runs of the plan (per value of `key`, a template over the input). */
export interface ConcurrencyLimit {
  limit: number;
  key?: string;
  /** What a start over the limit does: queue it (default), cancel it, or cancel the oldest active run. */
  on_limit?: 'queue' | 'cancel_new' | 'cancel_oldest';
}

/** At most `limit` runs of the plan start (leave the queue) per `period_s` seconds (per value of `key`). */
export interface RateLimit {
  limit: number;
  period_s: number;
  key?: string;
}

/**
 * The step kinds. Each has its file in steps/ (its checks, start, timers, decisions and outputs)
 * and its line in the registry (steps/index.ts); the fields it reads are StepTemplate's.
 */
export const STEP_TYPES = ['agent', 'human_approval', 'human_input', 'condition', 'parallel', 'wait', 'sub_plan', 'transform'] as const;
export type StepType = (typeof STEP_TYPES)[number];
/** A plan step with the edges the engine follows. */
export interface CompiledStep {
  def: StepDefinition;
  /** Plan order (for current_step and listings). */
  position: number;
  /** Steps that must be finished (completed or skipped) first: depends_on plus a condition owning it. */
  deps: string[];
  /** The `parallel` step whose start releases this one (it runs inside that group). */
  group: string | null;
  /** Condition steps that name this step in then/else. */
  branchOf: string[];
}

export interface CompiledPlan {
  steps: Map<string, CompiledStep>;
  order: string[];
  /** Steps nothing depends on and no group contains: the default run output. */
  sinks: string[];
  output: Record<string, unknown> | undefined;
  concurrency: ConcurrencyLimit | undefined;
  rateLimit: RateLimit | undefined;
}

export const asList = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
