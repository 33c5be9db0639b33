import { completeStep, failStep, FINISHED, NOT_STARTED, record, stepOutput, type RunContext, type StepState } from '../run-state.js';
import type { StepTemplate } from '../plan-definition.js';
import type { RunStepRow } from '../run-list-store.js';
import { readOutputs } from '../step-outputs.js';
import { render, type TemplateScope } from '../templates.js';
import { StepError, type StepKind } from './kind.js';

const DEFAULT_MAX_CONCURRENCY = 10;
const MAX_ITEMS = 1000;

/** Creates one step per item of a for_each (kept across a redrive: items already done stay done). */
function expand(ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): void {
  const id = step.row.step_id;
  const existing = [...ctx.steps.values()].some((s) => s.row.parent_step_id === id);
  if (existing) return;
  const items = render(def.for_each, scope);
  if (!Array.isArray(items)) throw new StepError(`for_each yielded ${items === null ? 'null' : typeof items}, not an array`);
  if (items.length > MAX_ITEMS) throw new StepError(`for_each yielded ${items.length} items; at most ${MAX_ITEMS}`);
  items.forEach((item, index) => {
    const instanceId = `${id}[${index}]`;
    const row: RunStepRow = {
      ...step.row,
      step_id: instanceId,
      parent_step_id: id,
      item_index: index,
      item: JSON.stringify(item ?? null),
      ...NOT_STARTED,
    };
    ctx.steps.set(instanceId, { row, dirty: true });
  });
}

/**
 * A parallel step: a group whose start releases its members — the plan steps it lists, or one
 * step per item of its for_each (max_concurrency in flight) — and that completes when they all
 * finished (its output: theirs by id, or by item), or fails with the first that failed.
 */
export const parallel: StepKind = {
  repeatable: false,
  repeatsStep: true,

  checkFields(step, { at, problem, topLevel, checkRepeated }) {
    if (!topLevel) problem(`${at}.type`, 'a for_each cannot repeat a parallel step');
    if ((step.steps === undefined) === (step.for_each === undefined)) {
      problem(`${at}.steps`, 'a parallel step has either steps (ids started together) or for_each with step');
    }
    if (step.for_each === undefined) return;
    if (step.step === undefined) problem(`${at}.step`, 'is required with for_each');
    else checkRepeated(step.step, `${at}.step`);
    if (typeof step.for_each !== 'string' && !Array.isArray(step.for_each))
      problem(`${at}.for_each`, 'is an array or a template that yields one');
  },

  checkReferences(step, { at, problem, ids, groupOf }) {
    for (const child of step.steps ?? []) {
      if (!ids.has(child)) problem(`${at}.steps`, `unknown step '${child}'`);
      else if (child === step.id) problem(`${at}.steps`, 'a parallel step cannot contain itself');
      else if (groupOf.has(child)) problem(`${at}.steps`, `step '${child}' is already in parallel step '${groupOf.get(child)}'`);
      else groupOf.set(child, step.id);
    }
  },

  link(def, steps) {
    for (const child of def.steps ?? []) if (steps.has(child)) steps.get(child)!.group = def.id;
  },

  memberLimit(def) {
    return def.max_concurrency ?? DEFAULT_MAX_CONCURRENCY;
  },

  async start(_tx, ctx, step, def, scope) {
    record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt });
    if (def.for_each !== undefined) expand(ctx, step, def, scope);
  },

  async settle(tx, ctx, group, def, ports) {
    const members =
      def.for_each !== undefined
        ? [...ctx.steps.values()].filter((s) => s.row.parent_step_id === group.row.step_id)
        : (def.steps ?? []).map((id) => ctx.steps.get(id)!);
    const failed = members.find((m) => m.row.status === 'failed' || m.row.status === 'cancelled');
    if (failed) {
      failStep(ctx, group, `step '${failed.row.step_id}' ${failed.row.status}${failed.row.error ? `: ${failed.row.error}` : ''}`);
      return true;
    }
    if (!members.every((m) => FINISHED.has(m.row.status))) return false;
    try {
      await readOutputs(
        tx,
        members.filter((m) => m.row.status === 'completed'),
        ports.readOutput,
      );
    } catch (err) {
      // A member's output whose artifact is gone fails the group, as a member that failed would.
      if (!(err instanceof StepError)) throw err;
      failStep(ctx, group, err.message);
      return true;
    }
    const output =
      def.for_each !== undefined
        ? members.sort((a, b) => a.row.item_index - b.row.item_index).map((m) => stepOutput(m))
        : Object.fromEntries(members.map((m) => [m.row.step_id, m.row.status === 'completed' ? stepOutput(m) : null]));
    completeStep(ctx, group, output);
    return true;
  },
};
