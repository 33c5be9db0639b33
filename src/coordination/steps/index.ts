import type { Tx } from '../../kernel/tx.js';
import type { StepTemplate, StepType } from '../plan-definition.js';
import { changeStep, definition, failStep, record, templateScope, type RunContext, type StepState } from '../run-state.js';
import { readOutputsFor } from '../step-outputs.js';
import { TemplateError } from '../templates.js';
import { agent } from './agent.js';
import { condition } from './condition.js';
import { humanApproval } from './human-approval.js';
import { humanInput } from './human-input.js';
import { StepError, type StepKind, type StepPorts } from './kind.js';
import { parallel } from './parallel.js';
import { subPlan } from './sub-plan.js';
import { transform } from './transform.js';
import { wait } from './wait.js';

/** Every step kind, by its type: the one list of them. */
export const STEP_KINDS: Record<StepType, StepKind> = {
  agent,
  human_approval: humanApproval,
  human_input: humanInput,
  condition,
  parallel,
  wait,
  sub_plan: subPlan,
  transform,
};

/** The kind of a step definition. */
export function kindOf(def: StepTemplate): StepKind {
  return STEP_KINDS[def.type];
}

/** The kind of a step of a run (a for_each item's is its group's `step`). */
export function kindOfStep(ctx: RunContext, step: StepState): StepKind {
  return STEP_KINDS[definition(ctx, step).type];
}

/**
 * Starts a ready step: counts its attempt, marks it running and hands it to its kind. An
 * expression or template that fails on the run's data fails the step, not the transition.
 */
export async function startStep(tx: Tx, ctx: RunContext, step: StepState, ports: StepPorts): Promise<void> {
  const def = definition(ctx, step);
  const id = step.row.step_id;
  changeStep(step, { status: 'running', attempt: step.row.attempt + 1, started_at: ctx.now, wake_at: null, error: null });
  const eventsBefore = ctx.events.length;
  try {
    await readOutputsFor(tx, ctx, def, ports.readOutput);
    await STEP_KINDS[def.type].start(tx, ctx, step, def, templateScope(ctx, step.row.item), ports);
  } catch (err) {
    // Expressions and templates fail on the run's data, not on the server: the step fails.
    if (!(err instanceof StepError || err instanceof TemplateError)) throw err;
    // Some kinds announce the start before they evaluate anything: the timeline shows it once.
    const announced = ctx.events.slice(eventsBefore).some((e) => e.type === 'step.started' && e.step_id === id);
    if (!announced) record(ctx, 'step.started', id, { attempt: step.row.attempt });
    failStep(ctx, step, err.message);
  }
}

export type { Asked, HumanDecision, StepKind, StepPorts } from './kind.js';
export { parseAttemptRef } from './agent.js';
