import { assertMayChange } from '../auth/ownership.js';
import { actsForPlatform } from '../auth/principal.js';
import { Conflict, InvalidRequest, NotFound } from '../kernel/errors.js';
import type { AuditTrail } from '../kernel/ports.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import type { Caller } from './caller.js';
import type { RunEngine } from './engine.js';
import { compilePlan } from './plan.js';
import type { CompiledPlan, PlanDefinition } from './plan-definition.js';
import type { PlanStore } from './plan-store.js';
import type { RunRow, RunStepRow } from './run-list-store.js';
import { NOT_STARTED, RUN_FINISHED, type RunContext, type StepState } from './run-state.js';
import { runView, type Run } from './run-service.js';
import type { StepRefs } from './step-refs.js';
import type { RunStore } from './run-store.js';

/** Runs a replay takes at most per call (SWITCHBOARD_REPLAY_MAX_RUNS may lower it). */
export const MAX_REPLAY = 10_000;
/** Runs replayed per transaction. */
const REPLAY_BATCH = 100;

export interface ReplayRequest {
  filter: { plan_id?: string; status?: 'completed' | 'failed' | 'cancelled'; after?: string; before?: string; error?: string };
  /** Where each replay starts (not `from`: the Python client passes body fields as keyword arguments). */
  replay_from: 'start' | 'failed_step';
  dry_run?: boolean;
}

export interface Replayed {
  count: number;
  run_ids: string[];
  matched: number;
  truncated: boolean;
}

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

/** What a rerun runs again: the top-level steps, and the one for_each item it reruns (its group's other items are kept). */
export interface RerunScope {
  steps: Set<string>;
  item: { group: string; id: string } | null;
}

const ITEM_ID = /^(.+)\[(\d+)\]$/;

/**
 * `from` and every step after it: what depends on one of them (depends_on, a condition's
 * branches), the members of a group among them, and the group `from` runs in (its other
 * members are kept). `from` may be a for_each item (`<step>[<index>]`): its group runs again.
 */
export function rerunScope(plan: CompiledPlan, from: string): RerunScope | null {
  const item = ITEM_ID.exec(from);
  const start = item ? item[1]! : from;
  const compiled = plan.steps.get(start);
  if (!compiled || (item !== null && compiled.def.for_each === undefined)) return null;
  const steps = new Set([start]);
  const home = compiled.group;
  if (home !== null) steps.add(home);
  for (let grew = true; grew;) {
    grew = false;
    for (const id of plan.order) {
      if (steps.has(id)) continue;
      const step = plan.steps.get(id)!;
      const inRerunGroup = step.group !== null && step.group !== home && steps.has(step.group);
      if (!step.deps.some((dep) => steps.has(dep)) && !inRerunGroup) continue;
      steps.add(id);
      grew = true;
    }
  }
  return { steps, item: item ? { group: start, id: from } : null };
}

/**
 * Where a failed run failed: the failed step that is no group (a for_each item rather than its
 * group, a parallel member rather than its parallel step); null when no step failed.
 */
function failedStep(steps: RunStepRow[], run: RunRow): string | null {
  const plan = compilePlan(JSON.parse(run.definition) as PlanDefinition);
  const failed = steps.filter((s) => s.status === 'failed');
  const leaf = failed.find((s) => s.parent_step_id !== null || plan.steps.get(s.step_id)?.def.type !== 'parallel');
  return (leaf ?? failed[0])?.step_id ?? null;
}

/** The type of the step `id` runs as (a for_each item: its repeated step's). */
function typeOf(plan: CompiledPlan, scope: RerunScope, id: string): string | undefined {
  if (scope.item?.id === id) return plan.steps.get(scope.item.group)!.def.step?.type;
  return scope.steps.has(id) ? plan.steps.get(id)?.def.type : undefined;
}

/**
 * Reruns of finished runs: a new run (`rerun_of` the earlier one) that keeps the outputs of the
 * steps `from_step` does not lead to, and runs `from_step` and everything after it again.
 */
export class RunRerun {
  constructor(
    private readonly deps: { runs: RunStore; plans: PlanStore; engine: RunEngine; audit: AuditTrail; refs: StepRefs },
    private readonly maxReplay = MAX_REPLAY,
  ) {}

  async rerun(runId: string, request: RerunRequest, caller: Caller): Promise<Run> {
    const { runs, audit } = this.deps;
    return runs.inTransaction(async (tx) => {
      const earlier = await runs.findRun(tx, runId);
      if (!earlier) throw new NotFound('Run', runId);
      assertMayChange(caller, { type: 'run', id: runId, createdBy: earlier.created_by });
      if (earlier.parent_run_id !== null)
        throw new Conflict(`Run '${runId}' is a sub_plan's run: rerun its parent run '${earlier.parent_run_id}'`);
      if (!RUN_FINISHED.has(earlier.status)) throw new Conflict(`Run '${runId}' is ${earlier.status}: only finished runs are rerun`);
      const id = await this.rerunIn(tx, earlier, request, caller);
      await audit.record(tx, { action: 'run.rerun', resource: { type: 'run', id } });
      return runView(runs, this.deps.refs, tx, id);
    });
  }

  /**
   * Replays the finished runs `request.filter` matches (at most maxReplay, oldest first): each
   * again from its start, or from the step it failed at (runs that failed at none are passed
   * over). Each run is replayed in a transaction of its batch; the audit log gets one entry.
   * `matched` counts the runs the filter matched (with those passed over), `truncated` says they
   * were more than one call takes.
   */
  async replay(request: ReplayRequest, caller: Caller): Promise<Replayed> {
    const { runs, plans, audit } = this.deps;
    const { filter } = request;
    const ms = (time: string | undefined) => (time === undefined ? undefined : Date.parse(time));
    const planId = filter.plan_id === undefined ? undefined : ((await plans.findPlan(autocommit, filter.plan_id))?.id ?? filter.plan_id);
    const runFilter = {
      planId,
      status: filter.status,
      startedAfter: ms(filter.after),
      startedBefore: ms(filter.before),
      error: filter.error,
      createdBy: actsForPlatform(caller) ? undefined : (caller.agentId ?? caller.actor),
    };
    // One more than taken: whether any were left over, and only then a count of them all.
    const matched = await runs.replayable(autocommit, runFilter, this.maxReplay + 1);
    const truncated = matched.length > this.maxReplay;
    const total = truncated ? await runs.countReplayable(autocommit, runFilter) : matched.length;
    if (truncated) matched.pop();
    const replays: { run: RunRow; from: string | null }[] = [];
    for (const run of matched) {
      if (request.replay_from === 'start') replays.push({ run, from: null });
      else {
        const from = failedStep(await runs.runSteps(autocommit, run.id), run);
        if (from !== null) replays.push({ run, from });
      }
    }
    if (request.dry_run) return { count: replays.length, run_ids: replays.map((r) => r.run.id), matched: total, truncated };
    const ids: string[] = [];
    for (let at = 0; at < replays.length; at += REPLAY_BATCH) {
      await runs.inTransaction(async (tx) => {
        if (at === 0) await audit.record(tx, { action: 'run.replay', resource: { type: 'plan', id: planId ?? '*' } });
        for (const { run, from } of replays.slice(at, at + REPLAY_BATCH))
          ids.push(await this.rerunIn(tx, run, { from_step: from }, caller));
      });
      // Live work goes first between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
    return { count: ids.length, run_ids: ids, matched: total, truncated };
  }

  /** Starts the rerun of `earlier` (from its start when `from_step` is null); returns the new run's id. */
  private async rerunIn(
    tx: Tx,
    earlier: RunRow,
    request: Omit<RerunRequest, 'from_step'> & { from_step: string | null },
    caller: Caller,
  ): Promise<string> {
    const { runs, engine } = this.deps;
    const runId = earlier.id;
    const version = await this.version(tx, earlier, request.plan_version ?? 'same');
    const plan = compilePlan(version.definition);
    const scope = request.from_step === null ? { steps: new Set(plan.order), item: null } : rerunScope(plan, request.from_step);
    if (!scope) throw InvalidRequest.field('from_step', `plan version ${version.number} has no step '${request.from_step}'`);
    const earlierSteps = await runs.runSteps(tx, runId);
    const item = scope.item;
    if (item && !earlierSteps.some((s) => s.step_id === item.id)) {
      throw InvalidRequest.field('from_step', `run '${runId}' has no for_each item '${item.id}'`);
    }
    for (const stepId of Object.keys(request.step_inputs ?? {})) {
      if (typeOf(plan, scope, stepId) !== 'agent') {
        throw InvalidRequest.field(`step_inputs.${stepId}`, `names no agent step that runs again from '${request.from_step}'`);
      }
    }
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
      (ctx) => seed(ctx, earlier.id, earlierSteps, scope, request.step_inputs ?? {}),
    );
    await runs.insertRunLabels(tx, row.id, (await runs.labelsOfRuns(tx, [runId])).get(runId)!);
    // Reused steps' references are the new run's too: they outlive the earlier run while it needs them.
    await this.deps.refs.holdSteps(tx, row.id, await runs.runSteps(tx, row.id));
    return row.id;
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
 * run's outcome (and its members', for a for_each) when that run finished it; a rerun for_each
 * item's group keeps its other items; edited inputs go to their steps.
 */
function seed(
  ctx: RunContext,
  earlierId: string,
  earlierSteps: RunStepRow[],
  scope: RerunScope,
  stepInputs: Record<string, Record<string, unknown>>,
): void {
  const reused = (row: RunStepRow): StepState => ({
    row: { ...row, run_id: ctx.run.id, detail: JSON.stringify({ reused_from: earlierId }) },
    dirty: true,
  });
  const fresh = (row: RunStepRow): StepState => {
    const overrides = stepInputs[row.step_id];
    return {
      row: { ...row, ...NOT_STARTED, run_id: ctx.run.id, detail: JSON.stringify(overrides ? { input_override: overrides } : {}) },
      dirty: true,
    };
  };
  const byId = new Map(earlierSteps.map((s) => [s.step_id, s]));
  // A snapshot: reused groups add their members as it goes.
  for (const state of [...ctx.steps.values()]) {
    const id = state.row.step_id;
    const before = byId.get(id);
    if (scope.steps.has(id) || !before || before.parent_step_id !== null || !REUSABLE.has(before.status)) {
      Object.assign(state, fresh(state.row));
      continue;
    }
    Object.assign(state, reused({ ...before, position: state.row.position }));
    for (const member of earlierSteps) if (member.parent_step_id === id) ctx.steps.set(member.step_id, reused(member));
  }
  if (!scope.item) return;
  // The group's items are kept (its start expands no new ones): the rerun item starts again.
  for (const member of earlierSteps) {
    if (member.parent_step_id !== scope.item.group) continue;
    const again = member.step_id === scope.item.id || !REUSABLE.has(member.status);
    ctx.steps.set(member.step_id, again ? fresh(member) : reused(member));
  }
}
