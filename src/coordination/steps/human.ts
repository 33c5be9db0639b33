import { randomBytes } from 'node:crypto';
import { Conflict } from '../../kernel/errors.js';
import { parseNullableJson } from '../../kernel/json.js';
import type { StepTemplate } from '../plan-definition.js';
import { changeStep, record, setStepDetail, stepDetail, type RunContext, type StepState } from '../run-state.js';
import type { FieldCheck, HumanDecision } from './kind.js';

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

/** Whether an `escalate_to` entry names a notification channel (else an approver). */
export const isChannelId = (entry: string): boolean => entry.startsWith('ntc_');

/** The rules of the fields that tell people of a waiting step: notify, remind_after_s, escalate_after_s and escalate_to. */
export function checkNoticeFields(step: StepTemplate, { at, problem }: FieldCheck, takesApprovers: boolean): void {
  if (step.escalate_after_s !== undefined && step.escalate_to === undefined)
    problem(`${at}.escalate_to`, 'escalate_after_s needs escalate_to');
  if (step.escalate_to !== undefined && step.escalate_after_s === undefined)
    problem(`${at}.escalate_after_s`, 'escalate_to needs escalate_after_s');
  if (step.remind_after_s !== undefined && (step.notify ?? []).length === 0)
    problem(`${at}.notify`, 'remind_after_s reminds the notify channels: name at least one');
  if (takesApprovers) return;
  (step.escalate_to ?? []).forEach((entry, i) => {
    if (!isChannelId(entry))
      problem(`${at}.escalate_to[${i}]`, `a ${step.type} step has no approvers: it escalates to notification channels (ntc_…) only`);
  });
}

/** The step reminds its channels once more (it still waits). */
export function remind(ctx: RunContext, step: StepState): void {
  record(ctx, 'step.reminded', step.row.step_id);
}

/**
 * The step escalates: the approvers `escalate_to` names join those of a step that names some
 * (one that names none already takes anyone with approvals:decide, which they would narrow).
 */
export function escalate(ctx: RunContext, step: StepState, def: StepTemplate): void {
  const asked = askedInput(step);
  const current = asked.approvers ?? [];
  const added = current.length === 0 ? [] : (def.escalate_to ?? []).filter((entry) => !isChannelId(entry) && !current.includes(entry));
  if (added.length > 0) changeStep(step, { input: JSON.stringify({ ...asked, approvers: [...current, ...added] }) });
  record(ctx, 'step.escalated', step.row.step_id, { added_approvers: added });
}
