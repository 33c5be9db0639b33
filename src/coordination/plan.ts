import Ajv, { type ValidateFunction } from 'ajv';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { FieldProblem } from '../kernel/errors.js';
import { expressionProblem } from '../kernel/expression-check.js';
import { collectReferences } from './templates.js';

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
}

export const STEP_TYPES = ['agent', 'human_approval', 'human_input', 'condition', 'parallel', 'wait', 'sub_plan', 'transform'] as const;
export type StepType = (typeof STEP_TYPES)[number];
/** Step types a `for_each` may repeat (one step per item, no nested groups or human gates). */
export const MAP_STEP_TYPES: readonly StepType[] = ['agent', 'transform', 'sub_plan', 'wait'];

export const DEFAULT_STEP_TIMEOUT_S = 3600;
export const DEFAULT_MAX_CONCURRENCY = 10;

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
}

export const asList = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** Builds the engine's view of a plan; assumes it passed validatePlan. */
export function compilePlan(plan: PlanDefinition): CompiledPlan {
  const steps = new Map<string, CompiledStep>();
  plan.steps.forEach((def, position) => {
    steps.set(def.id, { def, position, deps: [...(def.depends_on ?? [])], group: null, branchOf: [] });
  });
  for (const { def } of steps.values()) {
    if (def.type === 'condition') {
      for (const target of [...asList(def.then), ...asList(def.else)]) {
        const step = steps.get(target);
        if (!step) continue;
        step.branchOf.push(def.id);
        if (!step.deps.includes(def.id)) step.deps.push(def.id);
      }
    }
    if (def.type === 'parallel') for (const child of def.steps ?? []) if (steps.has(child)) steps.get(child)!.group = def.id;
  }
  const needed = new Set<string>();
  for (const step of steps.values()) {
    for (const dep of step.deps) needed.add(dep);
    if (step.group) needed.add(step.group);
  }
  const grouped = new Set([...steps.values()].filter((s) => s.group).map((s) => s.def.id));
  const order = plan.steps.map((s) => s.id);
  return { steps, order, sinks: order.filter((id) => !needed.has(id) && !grouped.has(id)), output: plan.output };
}

const schemaChecker = new Ajv.default({ strict: false, allErrors: true });
const validators = new BoundedMap<string, ValidateFunction>(1000);

/** The compiled validator of a human_input step's schema (compiled once per distinct schema). */
export function inputValidator(schema: Record<string, unknown>): ValidateFunction {
  return validators.getOrCreate(JSON.stringify(schema), () => schemaChecker.compile(schema));
}

/**
 * The plan's steps with what the spec lets a step leave out filled in, as they are saved (and
 * shown): a human step's prompt, and a human_input's schema (any JSON object).
 */
export function withStepDefaults(steps: StepDefinition[], alias: string): StepDefinition[] {
  return steps.map((step) => {
    if (step.type === 'human_approval') return { ...step, prompt: step.prompt ?? `Approve step ${step.id} of plan ${alias}?` };
    if (step.type === 'human_input') {
      return { ...step, prompt: step.prompt ?? `Provide the input of step ${step.id} of plan ${alias}`, schema: step.schema ?? { type: 'object' } };
    }
    return step;
  });
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
    if (step.type === 'condition') {
      for (const key of ['then', 'else'] as const) {
        for (const target of asList(step[key])) {
          if (!ids.has(target)) problem(`${at}.${key}`, `unknown step '${target}'`);
          else if (target === step.id) problem(`${at}.${key}`, 'a condition cannot branch to itself');
        }
      }
    }
    if (step.type === 'parallel' && step.steps) {
      for (const child of step.steps) {
        if (!ids.has(child)) problem(`${at}.steps`, `unknown step '${child}'`);
        else if (child === step.id) problem(`${at}.steps`, 'a parallel step cannot contain itself');
        else if (groupOf.has(child)) problem(`${at}.steps`, `step '${child}' is already in parallel step '${groupOf.get(child)}'`);
        else groupOf.set(child, step.id);
      }
    }
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

type Report = (field: string, message: string) => void;

/** The fields each step type requires or forbids. */
function checkFields(step: StepTemplate & { step?: StepTemplate }, at: string, problem: Report, topLevel: boolean): void {
  const requireField = (key: keyof StepTemplate, why = `is required for a ${step.type} step`) => {
    if (step[key] === undefined) problem(`${at}.${key}`, why);
  };
  switch (step.type) {
    case 'agent':
      if ((step.agent === undefined) === (step.capability === undefined)) problem(`${at}.agent`, 'an agent step names exactly one of agent or capability');
      if (step.strategy !== undefined && step.capability === undefined) problem(`${at}.strategy`, 'is only used with capability');
      break;
    case 'human_input':
      if (step.schema !== undefined) {
        try {
          inputValidator(step.schema);
        } catch (err) {
          problem(`${at}.schema`, `is not a valid JSON Schema: ${(err as Error).message}`);
        }
      }
      break;
    case 'condition':
      requireField('expression');
      break;
    case 'parallel':
      if (!topLevel) problem(`${at}.type`, 'a for_each cannot repeat a parallel step');
      if ((step.steps === undefined) === (step.for_each === undefined)) {
        problem(`${at}.steps`, 'a parallel step has either steps (ids started together) or for_each with step');
      }
      if (step.for_each !== undefined) {
        if (step.step === undefined) problem(`${at}.step`, 'is required with for_each');
        else {
          if (!MAP_STEP_TYPES.includes(step.step.type)) problem(`${at}.step.type`, `for_each repeats one of: ${MAP_STEP_TYPES.join(', ')}`);
          checkFields(step.step, `${at}.step`, problem, false);
        }
        if (typeof step.for_each !== 'string' && !Array.isArray(step.for_each)) problem(`${at}.for_each`, 'is an array or a template that yields one');
      }
      break;
    case 'wait': {
      const modes = [step.seconds, step.until, step.event].filter((v) => v !== undefined).length;
      if (modes !== 1) problem(`${at}.seconds`, 'a wait step has exactly one of seconds, until or event');
      if (step.until !== undefined && !step.until.includes('{{') && Number.isNaN(Date.parse(step.until))) {
        problem(`${at}.until`, 'is an ISO 8601 time or a template');
      }
      break;
    }
    case 'sub_plan':
      requireField('plan_id');
      break;
    case 'transform':
      if ((step.expression === undefined) === (step.output === undefined)) problem(`${at}.expression`, 'a transform has either expression or output');
      break;
  }
  if (step.expression !== undefined) {
    const found = expressionProblem(step.expression);
    if (found) problem(`${at}.expression`, found);
  }
  if (topLevel && step.step !== undefined && step.type !== 'parallel') problem(`${at}.step`, 'is only used by parallel for_each');
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
