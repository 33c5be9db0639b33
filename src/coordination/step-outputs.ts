/**
 * Step outputs kept only as their reference: a step output that came by reference (an
 * acknowledgement over the inline limit) is stored as `output_ref` alone, so the run's row
 * holds no copy of it. Whatever needs its value — later steps' templates and expressions, a
 * group's output, the run's output — reads it back from its artifact first, once per
 * transition, and only for the steps it names.
 */

import { NotFound } from '../kernel/errors.js';
import { fieldsReadBelow, type FieldsRead } from '../kernel/expression-check.js';
import type { Tx } from '../kernel/tx.js';
import type { StepTemplate } from './plan-definition.js';
import { collectReferences, render } from './templates.js';
import { stepOutput, templateScope, type RunContext, type StepState } from './run-state.js';
import { StepError, type StepPorts } from './steps/kind.js';

/** What each step definition (or plan output) reads of `steps`: found once per definition. */
const readsOf = new WeakMap<object, FieldsRead>();

/** The step ids whose outputs `value`'s templates and `expression` (JSONata) may read, or 'all'. */
function outputsReadBy(value: object, expression?: string): FieldsRead {
  let reads = readsOf.get(value);
  if (reads === undefined) {
    const ids = new Set<string>();
    for (const reference of collectReferences(value)) {
      if (typeof reference !== 'string' && reference.root === 'steps') ids.add(reference.path[0] as string);
    }
    const read = expression === undefined ? ids : fieldsReadBelow(expression, 'steps');
    reads = read === 'all' ? 'all' : new Set([...ids, ...read]);
    readsOf.set(value, reads);
  }
  return reads;
}

/** Whether a step's output is stored by reference and not read back in this transition yet. */
const unread = (step: StepState) => step.output === undefined && step.row.output_ref !== null;

/** Reads back the outputs of `steps` kept by reference (a deleted artifact fails the step that needs it). */
export async function readOutputs(tx: Tx, steps: Iterable<StepState>, read: StepPorts['readOutput']): Promise<void> {
  for (const step of steps) {
    if (!unread(step)) continue;
    try {
      step.output = await read(tx, step.row.output_ref!);
    } catch (err) {
      if (!(err instanceof NotFound)) throw err;
      throw new StepError(`the output of step '${step.row.step_id}' is gone: ${err.message}`);
    }
  }
}

/** The finished top-level steps whose outputs a template scope offers and `reads` names. */
function named(ctx: RunContext, reads: FieldsRead): StepState[] {
  return [...ctx.steps.values()].filter(
    (s) => s.row.parent_step_id === null && s.row.status === 'completed' && (reads === 'all' || reads.has(s.row.step_id)),
  );
}

/** Reads back what a step about to start reads of earlier steps' outputs (its templates, its expression). */
export async function readOutputsFor(tx: Tx, ctx: RunContext, def: StepTemplate, read: StepPorts['readOutput']): Promise<void> {
  await readOutputs(tx, named(ctx, outputsReadBy(def, def.expression)), read);
}

/** How a run whose steps all finished ends: completed with its output, or failed when an output its output reads is gone. */
export async function runEnd(
  tx: Tx,
  ctx: RunContext,
  read: StepPorts['readOutput'],
): Promise<{ status: 'completed' | 'failed'; output: unknown; error: string | null }> {
  try {
    return { status: 'completed', output: await runOutput(tx, ctx, read), error: null };
  } catch (err) {
    if (!(err instanceof StepError)) throw err;
    return { status: 'failed', output: null, error: err.message };
  }
}

/** The output of a run whose steps all finished: the plan's output template, or its sinks' outputs by id. */
async function runOutput(tx: Tx, ctx: RunContext, read: StepPorts['readOutput']): Promise<unknown> {
  const template = ctx.plan.output;
  if (template !== undefined) {
    await readOutputs(tx, named(ctx, outputsReadBy(template)), read);
    return render(template, templateScope(ctx, null));
  }
  const sinks = ctx.plan.sinks.map((id) => ctx.steps.get(id)!).filter((step) => step.row.status === 'completed');
  await readOutputs(tx, sinks, read);
  return Object.fromEntries(sinks.map((step) => [step.row.step_id, stepOutput(step)]));
}
