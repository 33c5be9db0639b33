import { asList } from '../plan-definition.js';
import { completeStep, record, skipStep } from '../run-state.js';
import { evaluate, requireField, type StepKind } from './kind.js';

/**
 * A condition step: evaluates its expression and completes with `{result, branch}` at once; the
 * steps of the branch not taken (then or else) are skipped. Both branches depend on it.
 */
export const condition: StepKind = {
  repeatable: false,

  checkFields(step, check) {
    requireField(step, 'expression', check);
  },

  checkReferences(step, { at, problem, ids }) {
    for (const key of ['then', 'else'] as const) {
      for (const target of asList(step[key])) {
        if (!ids.has(target)) problem(`${at}.${key}`, `unknown step '${target}'`);
        else if (target === step.id) problem(`${at}.${key}`, 'a condition cannot branch to itself');
      }
    }
  },

  link(def, steps) {
    for (const target of [...asList(def.then), ...asList(def.else)]) {
      const step = steps.get(target);
      if (!step) continue;
      step.branchOf.push(def.id);
      if (!step.deps.includes(def.id)) step.deps.push(def.id);
    }
  },

  async start(_tx, ctx, step, def, scope, ports) {
    const id = step.row.step_id;
    const result = Boolean(await evaluate(ports, def.expression!, scope));
    record(ctx, 'step.started', id, { attempt: step.row.attempt });
    completeStep(ctx, step, { result, branch: result ? 'then' : 'else' });
    for (const target of asList(result ? def.else : def.then)) {
      const other = ctx.steps.get(target)!;
      if (other.row.status === 'pending') skipStep(ctx, other, `condition '${id}' took the ${result ? 'then' : 'else'} branch`);
    }
  },
};
