import { assertMayChange } from '../auth/ownership.js';
import { Conflict, InvalidRequest, NotFound } from '../kernel/errors.js';
import type { AuditTrail } from '../kernel/ports.js';
import type { Tx } from '../kernel/tx.js';
import type { Caller } from './caller.js';
import type { RunEngine } from './engine.js';
import { compilePlan } from './plan.js';
import type { CompiledPlan, PlanDefinition } from './plan-definition.js';
import type { PlanStore } from './plan-store.js';
import type { RunRow, RunStepRow } from './run-list-store.js';
import { RUN_FINISHED, type RunContext } from './run-state.js';
import { runView, type Run } from './run-service.js';
import type { RunStore } from './run-store.js';

export interface RerunRequest {
  from_step: string;
  /** The new run's input; the earlier run's when absent. */
  input?: Record<string, unknown>;
  /** Agent steps among those run again: the input each is given instead of its template's. */
  step_inputs?: Record<string, Record<string, unknown>>;
  /** The plan version the rerun follows: the earlier run's (default) or the plan's current one. */
  plan_version?: 'same' | 'latest';
}

/** Step outcomes a rerun keeps rather than running the step again. */
const REUSABLE = new Set(['completed', 'skipped']);

/**
 * `from` and every step that follows it: what depends on one of them (depends_on, a condition's
 * branches) and the members of a group among them. Plan order lists a step after its dependencies.
 */
export function downstreamOf(plan: CompiledPlan, from: string): Set<string> {
  const rerun = new Set([from]);
  for (const id of plan.order) {
    const step = plan.steps.get(id)!;
    if (step.deps.some((dep) => rerun.has(dep)) || (step.group !== null && rerun.has(step.group))) rerun.add(id);
  }
  return rerun;
}

/**
 * Reruns of finished runs: a new run (`rerun_of` the earlier one) that keeps the outputs of the
 * steps `from_step` does not lead to, and runs `from_step` and everything after it again.
 */
export class RunRerun {
  constructor(private readonly deps: { runs: RunStore; plans: PlanStore; engine: RunEngine; audit: AuditTrail }) {}

  async rerun(runId: string, request: RerunRequest, caller: Caller): Promise<Run> {
    const { runs, engine, audit } = this.deps;
    return runs.inTransaction(async (tx) => {
      const earlier = await runs.findRun(tx, runId);
      if (!earlier) throw new NotFound('Run', runId);
      assertMayChange(caller, { type: 'run', id: runId, createdBy: earlier.created_by });
      if (earlier.parent_run_id !== null)
        throw new Conflict(`Run '${runId}' is a sub_plan's run: rerun its parent run '${earlier.parent_run_id}'`);
      if (!RUN_FINISHED.has(earlier.status)) throw new Conflict(`Run '${runId}' is ${earlier.status}: only finished runs are rerun`);
      const version = await this.version(tx, earlier, request.plan_version ?? 'same');
      const plan = compilePlan(version.definition);
      const compiled = plan.steps.get(request.from_step);
      if (!compiled) throw InvalidRequest.field('from_step', `plan version ${version.number} has no step '${request.from_step}'`);
      if (compiled.group !== null)
        throw InvalidRequest.field('from_step', `'${request.from_step}' runs inside '${compiled.group}': rerun from that step`);
      const rerun = downstreamOf(plan, request.from_step);
      for (const stepId of Object.keys(request.step_inputs ?? {})) {
        const step = plan.steps.get(stepId);
        if (!step || !rerun.has(stepId) || step.def.type !== 'agent') {
          throw InvalidRequest.field(`step_inputs.${stepId}`, `names no agent step that runs again from '${request.from_step}'`);
        }
      }
      const earlierSteps = await runs.runSteps(tx, runId);
      const row = await engine.start(
        tx,
        {
          planId: earlier.plan_id,
          planVersion: version.number,
          definition: version.definition,
          definitionText: version.text,
          input: request.input ?? (JSON.parse(earlier.input) as Record<string, unknown>),
          priority: earlier.priority,
          createdBy: caller.agentId ?? caller.actor,
          rerunOf: runId,
        },
        undefined,
        (ctx) => seed(ctx, earlier, earlierSteps, rerun, request),
      );
      const labels = (await runs.labelsOfRuns(tx, [runId])).get(runId)!;
      await runs.insertRunLabels(tx, row.id, labels);
      await audit.record(tx, { action: 'run.rerun', resource: { type: 'run', id: row.id } });
      return runView(runs, tx, row.id);
    });
  }

  private async version(
    tx: Tx,
    earlier: RunRow,
    which: 'same' | 'latest',
  ): Promise<{ number: number; definition: PlanDefinition; text: string }> {
    if (which === 'same')
      return { number: earlier.plan_version, definition: JSON.parse(earlier.definition) as PlanDefinition, text: earlier.definition };
    const plan = await this.deps.plans.currentPlan(tx, earlier.plan_id);
    if (!plan) throw new Conflict(`Plan '${earlier.plan_id}' of run '${earlier.id}' was deleted: rerun it with plan_version 'same'`);
    return { number: plan.version, definition: plan.definition, text: plan.text };
  }
}

/**
 * Fills the new run's steps before it starts: a step it does not run again keeps the earlier
 * run's outcome (and its members', for a group) when that run finished it; edited inputs go to theirs.
 */
function seed(ctx: RunContext, earlier: RunRow, earlierSteps: RunStepRow[], rerun: Set<string>, request: RerunRequest): void {
  const byId = new Map(earlierSteps.map((s) => [s.step_id, s]));
  for (const state of ctx.steps.values()) {
    const id = state.row.step_id;
    const overrides = request.step_inputs?.[id];
    if (overrides !== undefined) state.row.detail = JSON.stringify({ input_override: overrides });
    const before = byId.get(id);
    if (rerun.has(id) || !before || before.parent_step_id !== null || !REUSABLE.has(before.status)) continue;
    state.row = { ...before, run_id: ctx.run.id, position: state.row.position, detail: JSON.stringify({ reused_from: earlier.id }) };
    for (const member of earlierSteps.filter((s) => s.parent_step_id === id)) {
      ctx.steps.set(member.step_id, {
        row: { ...member, run_id: ctx.run.id, detail: JSON.stringify({ reused_from: earlier.id }) },
        dirty: false,
      });
    }
  }
}
