import { parseNullableJson } from '../../kernel/json.js';
import type { PayloadRef } from '../../kernel/ports.js';
import { changeStep, completeStep, failStep, record, type RunContext, type StepState } from '../run-state.js';
import type { RunRow } from '../run-list-store.js';
import { render } from '../templates.js';
import { requireField, type StepKind } from './kind.js';

/** sub_plan nesting beyond this fails the step (a plan that starts itself would never end). */
const MAX_DEPTH = 10;

/** The step takes its child run's outcome (nothing while the child is still going). */
function takeChildOutcome(ctx: RunContext, step: StepState, child: RunRow): void {
  // A child's output kept by reference is the step's by the same reference (read back when needed).
  if (child.status === 'completed' && child.output_ref !== null)
    completeStep(ctx, step, undefined, JSON.parse(child.output_ref) as PayloadRef);
  else if (child.status === 'completed') completeStep(ctx, step, parseNullableJson(child.output) ?? {});
  else if (child.status === 'failed') failStep(ctx, step, `sub-plan run ${child.id} failed: ${child.error ?? 'unknown error'}`);
  else if (child.status === 'cancelled') failStep(ctx, step, `sub-plan run ${child.id} was cancelled`);
}

/**
 * A sub_plan step: starts a child run of the newest version of its plan, in the same
 * transaction, and completes or fails with it; cancelling the step cancels the child.
 */
export const subPlan: StepKind = {
  repeatable: true,

  checkFields(step, check) {
    requireField(step, 'plan_id', check);
  },

  planOf(step) {
    return step.plan_id;
  },

  async start(tx, ctx, step, def, scope, ports) {
    const input = (render(def.input ?? {}, scope) ?? {}) as Record<string, unknown>;
    changeStep(step, { input: JSON.stringify(input) });
    record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt, plan_id: def.plan_id });
    if (ctx.run.depth + 1 > MAX_DEPTH) {
      failStep(ctx, step, `sub-plans nest deeper than ${MAX_DEPTH} levels`);
      return;
    }
    const plan = await ports.plans.currentPlan(tx, def.plan_id!);
    if (!plan) {
      failStep(ctx, step, `plan '${def.plan_id}' does not exist`);
      return;
    }
    const child = await ports.startChild(
      tx,
      {
        planId: plan.id,
        planAlias: plan.alias,
        planVersion: plan.version,
        definition: plan.definition,
        definitionText: plan.text,
        input,
        event: ctx.event ?? undefined,
        createdBy: ctx.run.created_by,
      },
      { run: ctx.run, stepId: step.row.step_id },
    );
    changeStep(step, { child_run_id: child.id });
    takeChildOutcome(ctx, step, child);
  },

  async withdraw(tx, _ctx, step, reason, ports) {
    if (step.row.child_run_id !== null) await ports.cancelChild(tx, step.row.child_run_id, reason);
  },

  onChildFinished(ctx, step, child) {
    if (step.row.status !== 'running' || step.row.child_run_id !== child.id) return false;
    takeChildOutcome(ctx, step, child);
    return true;
  },
};
