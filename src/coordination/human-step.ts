import { iso } from '../kernel/clock.js';
import { Conflict, NotFound } from '../kernel/errors.js';
import type { ApprovalClaim } from './approval-links.js';
import type { StepTemplate } from './plan-definition.js';
import { definition, stepDetail, type RunContext, type StepState } from './run-state.js';
import { kindOf, type HumanDecision } from './steps/index.js';

/**
 * The waiting human step a decision is for. Through an approval link (`claim`), the link's
 * wait of the step must be the one waiting, and the link must not have expired.
 */
export function waitingHumanStep(
  ctx: RunContext,
  stepId: string,
  type: HumanDecision['type'] | null,
  claim?: ApprovalClaim,
): { step: StepState; def: StepTemplate } {
  const step = ctx.steps.get(stepId);
  if (!step) throw new NotFound('Step', stepId);
  const def = definition(ctx, step);
  if (type !== null && def.type !== type) throw new Conflict(`Step '${stepId}' is a ${def.type} step, not ${type}`);
  if (step.row.status !== 'waiting') {
    const decided = kindOf(def).decidedBy?.(step);
    if (decided)
      throw new Conflict(`Step '${stepId}' was already decided by ${decided.by} at ${decided.at}`, {
        decided_by: decided.by,
        decided_at: decided.at,
      });
    if (ctx.run.status === 'cancelled') throw new Conflict(`Run '${ctx.run.id}' was cancelled: ${ctx.run.error ?? 'no reason given'}`);
    throw new Conflict(`Step '${stepId}' is ${step.row.status}, not waiting`);
  }
  if (claim) {
    if (claim.waitId !== stepDetail(step).wait_id)
      throw new Conflict(`This link is for an earlier wait of step '${stepId}'; the step asks again with a new link`);
    if (claim.expiresAt <= ctx.now) throw new Conflict(`This link expired at ${iso(claim.expiresAt)}`);
  }
  return { step, def };
}
