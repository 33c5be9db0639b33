import { randomBytes } from 'node:crypto';
import { Conflict } from '../../kernel/errors.js';
import { parseNullableJson } from '../../kernel/json.js';
import { changeStep, record, setStepDetail, stepDetail, type RunContext, type StepState } from '../run-state.js';
import type { HumanDecision } from './kind.js';

/** What a human step asked when it started waiting (its input: the prompt, and its schema or approvers). */
export interface AskedInput {
  prompt?: string;
  schema?: Record<string, unknown>;
  approvers?: string[];
}

/**
 * A human step starts waiting: its input is what the person is asked, and its wait gets an id,
 * so that a link to an earlier wait (before a redrive) decides nothing.
 */
export function startWaiting(
  ctx: RunContext,
  step: StepState,
  type: HumanDecision['type'],
  input: AskedInput,
  timeout: number | null,
): void {
  changeStep(step, { status: 'waiting', input: JSON.stringify(input), wake_at: timeout });
  setStepDetail(step, { ...stepDetail(step), wait_id: randomBytes(9).toString('base64url') });
  record(ctx, 'step.waiting', step.row.step_id, { type });
}

export function askedInput(step: StepState): AskedInput {
  return (parseNullableJson(step.row.input) ?? {}) as AskedInput;
}

/** The decision, when it is of the kind `type` (the engine hands a kind only its own). */
export function decisionOf<T extends HumanDecision['type']>(decision: HumanDecision, type: T): Extract<HumanDecision, { type: T }> {
  if (decision.type !== type) throw new Conflict(`A ${decision.type} decision does not decide a ${type} step`);
  return decision as Extract<HumanDecision, { type: T }>;
}
