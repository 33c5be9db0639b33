import Ajv, { type ValidateFunction } from 'ajv';
import { BoundedMap } from '../../kernel/bounded-map.js';
import { iso } from '../../kernel/clock.js';
import { Forbidden, InvalidRequest } from '../../kernel/errors.js';
import { ajvFieldProblems } from '../../kernel/validation-problems.js';
import { decisionRefusal } from '../approvers.js';
import { completeStep, record, setStepDetail, stepDetail } from '../run-state.js';
import { render } from '../templates.js';
import { askedInput, checkNoticeFields, decisionOf, startWaiting } from './human.js';
import type { StepKind } from './kind.js';

const schemaChecker = new Ajv.default({ strict: false, allErrors: true });
const validators = new BoundedMap<string, ValidateFunction>(1000);

/** The compiled validator of a human_input step's schema (compiled once per distinct schema). */
function inputValidator(schema: Record<string, unknown>): ValidateFunction {
  return validators.getOrCreate(JSON.stringify(schema), () => schemaChecker.compile(schema));
}

/**
 * A human_input step: waits for someone with approvals:decide to submit data matching its
 * schema, which becomes its output.
 */
export const humanInput: StepKind = {
  repeatable: false,

  checkFields(step, check) {
    const { at, problem } = check;
    checkNoticeFields(step, check, false);
    if (step.schema === undefined) return;
    try {
      inputValidator(step.schema);
    } catch (err) {
      problem(`${at}.schema`, `is not a valid JSON Schema: ${(err as Error).message}`);
    }
  },

  withDefaults(step, alias) {
    return {
      ...step,
      prompt: step.prompt ?? `Provide the input of step ${step.id} of plan ${alias}`,
      schema: step.schema ?? { type: 'object' },
    };
  },

  async start(_tx, ctx, step, def, scope) {
    startWaiting(ctx, step, 'human_input', { prompt: render(def.prompt, scope) as string, schema: def.schema }, null);
  },

  asked(step) {
    const asked = askedInput(step);
    return { event: 'input.requested', prompt: asked.prompt ?? null, schema: asked.schema ?? {} };
  },

  decide(ctx, step, def, decision, by) {
    const { data } = decisionOf(decision, 'human_input');
    const refusal = decisionRefusal([], by);
    if (refusal !== null) throw new Forbidden(`${refusal} (step '${step.row.step_id}')`);
    const validate = inputValidator(def.schema ?? {});
    if (!validate(data)) throw new InvalidRequest('data does not match the step schema', ajvFieldProblems(validate.errors ?? [], 'data'));
    record(ctx, 'step.input_received', step.row.step_id, { by: by.id, by_kind: by.kind });
    setStepDetail(step, { ...stepDetail(step), submitted_by: by.id });
    completeStep(ctx, step, data);
  },

  decidedBy(step) {
    const submittedBy = stepDetail(step).submitted_by;
    return submittedBy && step.row.completed_at !== null ? { by: submittedBy, at: iso(step.row.completed_at) } : null;
  },
};
