import type { Result } from '../../../src/client/browser.js';

type WhoAmI = Pick<Result<'auth.whoami'>, 'kind' | 'role' | 'username' | 'agent_id' | 'permissions'>;

/**
 * Whether a step's approvers name this principal: a user as `user:<username>`, an agent as
 * `agent:<id>` or a bare id, anyone by `role:<role>`. The approvals inbox puts these
 * under "Waiting for you".
 */
export function namesMe(approvers: readonly string[], me: WhoAmI): boolean {
  return (
    namesMyAgent(approvers, me) ||
    approvers.some((entry) => entry === `role:${me.role}` || (me.kind === 'user' && entry === `user:${me.username}`))
  );
}

/** The step names the agent this principal acts as (`agent:<id>`, or a bare id: `user:`/`role:` are no agent ids). */
function namesMyAgent(approvers: readonly string[], me: WhoAmI): boolean {
  return me.agent_id !== null && approvers.some((entry) => entry === `agent:${me.agent_id}` || entry === me.agent_id);
}

/**
 * Whether the server would take this principal's decision of a step with these approvers (the
 * rule of src/coordination/approvers.ts, so that the console offers only what it would take):
 * a named agent always; anyone else with approvals:decide, when the step names nobody, names
 * them or their role, or they are an admin.
 */
export function mayDecide(approvers: readonly string[], me: WhoAmI): boolean {
  if (namesMyAgent(approvers, me)) return true;
  if (!me.permissions.includes('approvals:decide')) return false;
  return approvers.length === 0 || me.role === 'admin' || namesMe(approvers, me);
}
