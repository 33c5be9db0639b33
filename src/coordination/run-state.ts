/**
 * A run in memory for one transition (RunContext), and the changes a transition makes to it:
 * each change marks its row to be saved and records its timeline event.
 */

import { parseNullableJson } from '../kernel/json.js';
import type { OutgoingMessage, PayloadRef } from '../kernel/ports.js';
import type { CompiledPlan, PlanDefinition, StepTemplate } from './plan-definition.js';
import type { NewRunEvent, RunRow, RunStepRow } from './run-list-store.js';
import type { RunStatus, StepBlockedBy, StepStatus } from './tables.js';
import { TemplateError, type TemplateScope } from './templates.js';

/** The sender of the messages and decisions the platform makes itself. */
export const PLATFORM_SENDER = 'switchboard';

export const FINISHED: ReadonlySet<StepStatus> = new Set(['completed', 'failed', 'skipped', 'cancelled']);
export const IN_FLIGHT: ReadonlySet<StepStatus> = new Set(['running', 'waiting']);
export const RUN_FINISHED: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);

export interface Adaptive {
  enabled: boolean;
  max_revisions?: number;
}

export interface Revision {
  step: string;
  reason: string;
  change: Record<string, unknown>;
  at: string;
}

export interface StartRun {
  planId: string;
  /** The plan's alias, for the run's span (`invoke_workflow {alias}`). */
  planAlias?: string;
  planVersion: number;
  definition: PlanDefinition;
  /** The definition as stored with its plan version, when the caller has it (saves serializing it again). */
  definitionText?: string;
  input: Record<string, unknown>;
  event?: unknown;
  adaptive?: Adaptive;
  createdBy: string;
  /** 0–9: overrides the plan's priority. */
  priority?: number;
  /** The run this one reruns. */
  rerunOf?: string;
}

/** What a step remembers between transitions (JSON in run_steps.detail). */
export interface StepDetail {
  /** Agents this step was sent to, for adaptive re-routing. */
  tried?: string[];
  /** The agent a revision chose for the next attempt. */
  route_to?: string;
  /** Attempts made before the last revision (the retry budget restarts after one). */
  attempt_base?: number;
  /** wait on an event: the resolved match object. */
  match?: Record<string, unknown>;
  /** human steps: names this wait, so a link to an earlier wait (before a redrive) decides nothing. */
  wait_id?: string;
  /** human_input: who submitted the data (a decided approval says so in its output). */
  submitted_by?: string;
  /** agent: why the step waits rather than runs (no healthy agent has its capability). */
  blocked_by?: StepBlockedBy;
  /** A rerun's step: the run whose output it kept (not run again). */
  reused_from?: string;
  /** A rerun's agent step: the input it was given instead of its template's. */
  input_override?: Record<string, unknown>;
}

export interface StepState {
  row: RunStepRow;
  dirty: boolean;
  output?: unknown;
  detail?: StepDetail;
}

/** One run loaded for a transition: the run row, its steps and what the transition changes. */
export interface RunContext {
  run: RunRow;
  plan: CompiledPlan;
  steps: Map<string, StepState>;
  events: NewRunEvent[];
  now: number;
  isNew: boolean;
  initialWakeAt: number | null;
  initialStatus: RunStatus;
  input: unknown;
  event: unknown;
  /** The first step that failed in this transition (a failed step fails the run). */
  failed: StepState | null;
  /** Set while a parent run is itself in memory (start or cancel of a child): it reads the outcome directly. */
  parentInMemory: boolean;
  /**
   * The step messages this transition sends, sent together when it is saved (one insert for
   * all, and for all the runs of a batch); a step's `message_id` is set then.
   */
  outbox: { message: OutgoingMessage; step: StepState }[];
  /** Who caused the transition (the event log's actor): the requesting principal, an agent, or 'system'. */
  actor: string;
  /** The reason the request gave (cancel, approve, input), for the event log. */
  reason: string | null;
}

/** The state of a step that has not started: a new step, a for_each item, a redriven step. */
export const NOT_STARTED = {
  status: 'pending',
  attempt: 0,
  agent_id: null,
  capability: null,
  message_id: null,
  child_run_id: null,
  input: null,
  input_ref: null,
  output: null,
  output_ref: null,
  error: null,
  wake_at: null,
  wait_topic: null,
  detail: '{}',
  started_at: null,
  completed_at: null,
} as const satisfies Partial<RunStepRow>;

export function record(ctx: RunContext, type: string, stepId: string | null, detail: Record<string, unknown> = {}): void {
  ctx.events.push({ run_id: ctx.run.id, step_id: stepId, type, detail: JSON.stringify(detail), created_at: ctx.now });
}

export function changeStep(step: StepState, changes: Partial<RunStepRow>): void {
  Object.assign(step.row, changes);
  // A new output or input replaces the reference of the one before.
  if ('output' in changes && !('output_ref' in changes)) step.row.output_ref = null;
  if ('input' in changes && !('input_ref' in changes)) step.row.input_ref = null;
  step.dirty = true;
  if ('output' in changes) step.output = undefined;
  if ('detail' in changes) step.detail = undefined;
}

/** A step's output; one kept by reference must have been read back first (step-outputs.ts). */
export function stepOutput(step: StepState): unknown {
  if (step.output !== undefined) return step.output;
  if (step.row.output_ref !== null) throw new Error(`the output of step '${step.row.step_id}' was not read back from its reference`);
  step.output = parseNullableJson(step.row.output);
  return step.output;
}

export function stepDetail(step: StepState): StepDetail {
  step.detail ??= JSON.parse(step.row.detail) as StepDetail;
  return step.detail;
}

export function setStepDetail(step: StepState, detail: StepDetail): void {
  changeStep(step, { detail: JSON.stringify(detail) });
}

/** The plan's definition of a step (a for_each item's is its group's `step`). */
export function definition(ctx: RunContext, step: StepState): StepTemplate {
  if (step.row.parent_step_id !== null) return ctx.plan.steps.get(step.row.parent_step_id)!.def.step!;
  return ctx.plan.steps.get(step.row.step_id)!.def;
}

/**
 * An output kept by reference that the step's templates and expression do not name, so it was
 * not read back: hidden from expressions (their input is serialized without it), and a template
 * that reaches it anyway fails rather than reading null.
 */
function unreadOutput(steps: TemplateScope['steps'], id: string): void {
  Object.defineProperty(steps, id, {
    enumerable: false,
    get: () => {
      throw new TemplateError(`the output of step '${id}' was not read back from its reference`);
    },
  });
}

/** What templates and expressions of a step see: the run's input and event, finished steps' outputs, its item. */
export function templateScope(ctx: RunContext, item: string | null): TemplateScope {
  const steps: Record<string, { output: unknown }> = {};
  for (const s of ctx.steps.values()) {
    if (s.row.parent_step_id !== null) continue;
    if (s.row.status === 'completed' && s.output === undefined && s.row.output_ref !== null) unreadOutput(steps, s.row.step_id);
    else if (s.row.status === 'completed') steps[s.row.step_id] = { output: stepOutput(s) };
    else if (s.row.status === 'skipped') steps[s.row.step_id] = { output: null };
  }
  const scope: TemplateScope = { input: ctx.input, steps, event: ctx.event ?? {} };
  if (item !== null) scope.item = JSON.parse(item);
  return scope;
}

// ── Step and run outcomes ───────────────────────────────────────────────────────────

/**
 * `outputRef`: the output as an artifact (an acknowledgement over the inline limit). The row
 * then keeps only the reference; the value stays in memory for the rest of this transition.
 */
export function completeStep(ctx: RunContext, step: StepState, output: unknown, outputRef?: PayloadRef): void {
  changeStep(step, {
    status: 'completed',
    output: outputRef === undefined ? JSON.stringify(output) : null,
    output_ref: outputRef === undefined ? null : JSON.stringify(outputRef),
    completed_at: ctx.now,
    wake_at: null,
    wait_topic: null,
    error: null,
  });
  step.output = output;
  record(ctx, 'step.completed', step.row.step_id, { attempt: step.row.attempt });
}

export function failStep(ctx: RunContext, step: StepState, reason: string, output: unknown = null): void {
  ctx.failed ??= step;
  changeStep(step, {
    status: 'failed',
    error: reason,
    output: JSON.stringify(output),
    completed_at: ctx.now,
    wake_at: null,
    wait_topic: null,
  });
  record(ctx, 'step.failed', step.row.step_id, { attempt: step.row.attempt, error: reason });
}

export function skipStep(ctx: RunContext, step: StepState, reason: string): void {
  changeStep(step, { status: 'skipped', completed_at: ctx.now });
  record(ctx, 'step.skipped', step.row.step_id, { reason });
}

export function finishRun(ctx: RunContext, status: RunStatus, output: unknown, error: string | null): void {
  Object.assign(ctx.run, {
    status,
    output: output === null ? null : JSON.stringify(output),
    output_ref: null,
    error,
    completed_at: ctx.now,
    wake_at: null,
    blocked_by: null,
  });
  record(ctx, `run.${status}`, null, error ? { error } : {});
}

/** Something outside told to a run in memory: it changes the run and says whether it did. */
export type Signal = (ctx: RunContext) => Promise<boolean>;

/** Adds `signal` to what `runId` is told. */
export function signalTo(byRun: Map<string, Signal[]>, runId: string, signal: Signal): void {
  let list = byRun.get(runId);
  if (!list) byRun.set(runId, (list = []));
  list.push(signal);
}
