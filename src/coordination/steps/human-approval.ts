import { iso } from '../../kernel/clock.js';
import { Forbidden } from '../../kernel/errors.js';
import { decisionRefusal, type Decider } from '../approvers.js';
import { completeStep, failStep, PLATFORM_SENDER, record, stepOutput, type RunContext, type StepState } from '../run-state.js';
import { render } from '../templates.js';
import { askedInput, checkNoticeFields, decisionOf, startWaiting } from './human.js';
import type { StepKind } from './kind.js';

/** Who decides a human_approval on its timeout (on_timeout: approve or reject). */
const PLATFORM_DECIDER: Decider = {
  kind: 'system',
  id: PLATFORM_SENDER,
  actor: PLATFORM_SENDER,
  agentId: null,
  role: null,
  mayDecide: true,
  overrides: true,
};

/** Records who decided as the principal's kind and id (`decided_by` stays the id, as before). */
function decide(ctx: RunContext, step: StepState, approved: boolean, comment: string | null, by: Decider): void {
  const output = { approved, comment, decided_by: by.id, decided_by_kind: by.kind, decided_at: iso(ctx.now) };
  record(ctx, approved ? 'step.approved' : 'step.rejected', step.row.step_id, { decided_by: by.id, decided_by_kind: by.kind, comment });
  if (approved) completeStep(ctx, step, output);
  else failStep(ctx, step, `rejected by ${by.id}${comment ? `: ${comment}` : ''}`, output);
}

/**
 * A human_approval step: waits for its approvers (or anyone with approvals:decide) to approve,
 * which completes it, or reject, which fails it; on its timeout it fails, or is decided as
 * on_timeout says by the platform.
 */
export const humanApproval: StepKind = {
  repeatable: false,

  checkFields(step, check) {
    checkNoticeFields(step, check, true);
  },

  withDefaults(step, alias) {
    return { ...step, prompt: step.prompt ?? `Approve step ${step.id} of plan ${alias}?` };
  },

  async start(_tx, ctx, step, def, scope) {
    const timeout = def.timeout_seconds !== undefined ? ctx.now + def.timeout_seconds * 1000 : null;
    startWaiting(ctx, step, 'human_approval', { prompt: render(def.prompt, scope) as string, approvers: def.approvers ?? [] }, timeout);
  },

  async onTimer(_tx, ctx, step, def) {
    const policy = def.on_timeout ?? 'fail';
    record(ctx, 'step.timed_out', step.row.step_id, { on_timeout: policy });
    if (policy === 'fail') failStep(ctx, step, `no decision within ${def.timeout_seconds} s`);
    else decide(ctx, step, policy === 'approve', `${policy === 'approve' ? 'approved' : 'rejected'} on timeout`, PLATFORM_DECIDER);
  },

  asked(step) {
    const asked = askedInput(step);
    return { event: 'approval.requested', prompt: asked.prompt ?? null, approvers: asked.approvers ?? [] };
  },

  decide(ctx, step, _def, decision, by) {
    const { approved, comment } = decisionOf(decision, 'human_approval');
    // The approvers it asked when it started waiting, with those an escalation added.
    const refusal = decisionRefusal(askedInput(step).approvers ?? [], by);
    if (refusal !== null) throw new Forbidden(`${refusal} (step '${step.row.step_id}')`);
    decide(ctx, step, approved, comment, by);
  },

  decidedBy(step) {
    const output = stepOutput(step) as { decided_by?: string; decided_at?: string } | null;
    return output?.decided_by && output.decided_at ? { by: output.decided_by, at: output.decided_at } : null;
  },
};
