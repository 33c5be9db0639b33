import { completeStep, record } from '../run-state.js';
import { render } from '../templates.js';
import { evaluate, type StepKind } from './kind.js';

/** A transform step: completes at once with its expression's value, or its output template rendered. */
export const transform: StepKind = {
  repeatable: true,

  checkFields(step, { at, problem }) {
    if ((step.expression === undefined) === (step.output === undefined))
      problem(`${at}.expression`, 'a transform has either expression or output');
  },

  async start(_tx, ctx, step, def, scope, ports) {
    const output = def.expression !== undefined ? await evaluate(ports, def.expression, scope) : render(def.output, scope);
    record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt });
    completeStep(ctx, step, output ?? null);
  },
};
