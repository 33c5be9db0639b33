/**
 * A plan's checks when it is saved (validatePlan) and the engine's view of it (compilePlan): the
 * rules every plan follows (ids, dependencies, cycles, what templates may read), and each step
 * kind's own through the registry.
 */

import type { FieldProblem } from '../kernel/errors.js';
import { expressionProblem } from '../kernel/expression-check.js';
import type { CompiledPlan, CompiledStep, PlanDefinition, StepDefinition, StepTemplate } from './plan-definition.js';
import { STEP_KINDS } from './steps/index.js';
import type { FieldCheck, Report, StepKind } from './steps/kind.js';
import { collectReferences } from './templates.js';

/** A step's kind; undefined for a type no kind has (a plan that has not passed its schema, a model's draft). */
const kindOf = (step: StepTemplate): StepKind | undefined => STEP_KINDS[step.type];

/** Builds the engine's view of a plan; assumes it passed validatePlan. */
export function compilePlan(plan: PlanDefinition): CompiledPlan {
  const steps = new Map<string, CompiledStep>();
  plan.steps.forEach((def, position) => {
    steps.set(def.id, { def, position, deps: [...(def.depends_on ?? [])], group: null, branchOf: [] });
  });
  for (const { def } of steps.values()) kindOf(def)?.link?.(def, steps);
  const needed = new Set<string>();
  for (const step of steps.values()) {
    for (const dep of step.deps) needed.add(dep);
    if (step.group) needed.add(step.group);
  }
  const grouped = new Set([...steps.values()].filter((s) => s.group).map((s) => s.def.id));
  const order = plan.steps.map((s) => s.id);
  return {
    steps,
    order,
    sinks: order.filter((id) => !needed.has(id) && !grouped.has(id)),
    output: plan.output,
    concurrency: plan.concurrency,
    rateLimit: plan.rate_limit,
  };
}

/**
 * The plan's steps with what the spec lets a step leave out filled in, as they are saved (and
 * shown): a human step's prompt, and a human_input's schema (any JSON object).
 */
export function withStepDefaults(steps: StepDefinition[], alias: string): StepDefinition[] {
  return steps.map((step) => kindOf(step)?.withDefaults?.(step, alias) ?? step);
}

/** Everything wrong with a plan, as field problems (empty when it is valid). */
export function validatePlan(plan: PlanDefinition): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const problem = (field: string, message: string) => problems.push({ field, message });
  const ids = new Map<string, number>();
  plan.steps.forEach((step, i) => {
    if (ids.has(step.id)) problem(`steps[${i}].id`, `duplicate step id '${step.id}'`);
    else ids.set(step.id, i);
  });
  if (plan.steps.length === 0) problem('steps', 'a plan needs at least one step');

  const groupOf = new Map<string, string>();
  plan.steps.forEach((step, i) => {
    const at = `steps[${i}]`;
    for (const dep of step.depends_on ?? []) {
      if (!ids.has(dep)) problem(`${at}.depends_on`, `unknown step '${dep}'`);
      if (dep === step.id) problem(`${at}.depends_on`, 'a step cannot depend on itself');
    }
    if (new Set(step.depends_on ?? []).size !== (step.depends_on ?? []).length) problem(`${at}.depends_on`, 'duplicate step ids');
    checkFields(step, at, problem, true);
    kindOf(step)?.checkReferences?.(step, { at, problem, ids, groupOf });
  });
  if (problems.length > 0) return problems;

  const compiled = compilePlan(plan);
  const cycle = findCycle(compiled);
  if (cycle) {
    problem('steps', `dependency cycle: ${cycle.join(' → ')}`);
    return problems;
  }
  const ancestors = ancestorSets(compiled);
  plan.steps.forEach((step, i) => {
    const readable = ancestors.get(step.id)!;
    checkTemplates(templatedFields(step), `steps[${i}]`, readable, ids, false, problem);
    if (step.step) checkTemplates(templatedFields(step.step), `steps[${i}].step`, readable, ids, true, problem);
  });
  if (plan.output !== undefined) {
    checkTemplates(plan.output, 'output', new Set(ids.keys()), ids, false, problem);
  }
  return problems;
}

/** The kinds a for_each may repeat. */
const REPEATABLE = Object.entries(STEP_KINDS)
  .filter(([, kind]) => kind.repeatable)
  .map(([type]) => type);

/** The fields each step kind requires or forbids, and the expression any of them holds. */
function checkFields(step: StepTemplate & { step?: StepTemplate }, at: string, problem: Report, topLevel: boolean): void {
  const check: FieldCheck = {
    at,
    problem,
    topLevel,
    checkRepeated: (template, templateAt) => {
      if (!kindOf(template)?.repeatable) problem(`${templateAt}.type`, `for_each repeats one of: ${REPEATABLE.join(', ')}`);
      checkFields(template, templateAt, problem, false);
    },
  };
  kindOf(step)?.checkFields(step, check);
  if (step.expression !== undefined) {
    const found = expressionProblem(step.expression);
    if (found) problem(`${at}.expression`, found);
  }
  if (topLevel && step.step !== undefined && !kindOf(step)?.repeatsStep) problem(`${at}.step`, 'is only used by parallel for_each');
}

/** The step fields that may hold templates. */
const templatedFields = (step: StepTemplate) => ({
  input: step.input,
  prompt: step.prompt,
  until: step.until,
  event: step.event,
  output: step.output,
  for_each: step.for_each,
});

/** Every template in `value` must parse and read only what is known when it is resolved. */
function checkTemplates(
  value: unknown,
  at: string,
  readable: Set<string>,
  ids: Map<string, number>,
  insideMap: boolean,
  problem: Report,
): void {
  const references = collectReferences(value);
  for (const reference of references) {
    if (typeof reference === 'string') {
      problem(at, reference);
      continue;
    }
    if (reference.root === 'item' && !insideMap) problem(at, `'{{${reference.expression}}}': item is only defined inside a for_each step`);
    if (reference.root === 'steps') {
      const target = reference.path[0] as string;
      if (!ids.has(target)) problem(at, `'{{${reference.expression}}}' reads unknown step '${target}'`);
      else if (!readable.has(target)) {
        problem(at, `'{{${reference.expression}}}' reads step '${target}', which is not a dependency of this step (add it to depends_on)`);
      }
    }
  }
}

/** A dependency cycle as a path of step ids, or null. Edges: deps and group membership. */
function findCycle(plan: CompiledPlan): string[] | null {
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done') return null;
    if (state.get(id) === 'visiting') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'visiting');
    path.push(id);
    const step = plan.steps.get(id)!;
    for (const next of [...step.deps, ...(step.group ? [step.group] : [])]) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(id, 'done');
    return null;
  };
  for (const id of plan.order) {
    const cycle = visit(id);
    if (cycle) return cycle;
  }
  return null;
}

/**
 * The steps certainly finished before each step starts: its deps and their ancestors, and
 * the ancestors of its group (the group itself is still running).
 */
function ancestorSets(plan: CompiledPlan): Map<string, Set<string>> {
  const sets = new Map<string, Set<string>>();
  const of = (id: string): Set<string> => {
    const known = sets.get(id);
    if (known) return known;
    const step = plan.steps.get(id)!;
    const set = new Set<string>();
    for (const dep of step.deps) {
      set.add(dep);
      for (const a of of(dep)) set.add(a);
    }
    if (step.group) for (const a of of(step.group)) set.add(a);
    sets.set(id, set);
    return set;
  };
  for (const id of plan.order) of(id);
  return sets;
}
