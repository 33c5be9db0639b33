import { IN_FLIGHT, type RunContext, type StepState } from './run-state.js';
import { kindOf } from './steps/index.js';

/** Which pending steps of a run start now, are skipped, or wait (dependencies, groups, max_concurrency). */

/** In-flight for_each items per group step (max_concurrency). */
export function activeMembers(ctx: RunContext): Map<string, number> {
  const active = new Map<string, number>();
  for (const s of ctx.steps.values()) {
    const group = s.row.parent_step_id;
    if (group !== null && IN_FLIGHT.has(s.row.status)) active.set(group, (active.get(group) ?? 0) + 1);
  }
  return active;
}

export function readiness(ctx: RunContext, step: StepState, active: Map<string, number>): 'start' | 'skip' | 'wait' {
  if (step.row.wake_at !== null && step.row.wake_at > ctx.now) return 'wait';
  const status = (id: string) => ctx.steps.get(id)!.row.status;
  if (step.row.parent_step_id !== null) {
    const parent = ctx.steps.get(step.row.parent_step_id)!;
    if (parent.row.status !== 'running') return 'wait';
    const groupDef = ctx.plan.steps.get(parent.row.step_id)!.def;
    const limit = kindOf(groupDef).memberLimit?.(groupDef) ?? Infinity;
    return (active.get(parent.row.step_id) ?? 0) < limit ? 'start' : 'wait';
  }
  const compiled = ctx.plan.steps.get(step.row.step_id)!;
  if (compiled.group !== null) {
    const group = status(compiled.group);
    if (group === 'skipped') return 'skip';
    if (group !== 'running') return 'wait';
  }
  if (compiled.deps.length === 0) return 'start';
  let skipped = 0;
  for (const dep of compiled.deps) {
    const s = status(dep);
    if (s === 'skipped') skipped++;
    else if (s !== 'completed') return 'wait';
  }
  return skipped === compiled.deps.length ? 'skip' : 'start';
}
