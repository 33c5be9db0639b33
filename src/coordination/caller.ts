import type { Changer } from '../auth/ownership.js';
import type { Principal } from '../auth/principal.js';
import { deciderOf, type Decider } from './approvers.js';

/** Who calls: plans and runs are shared; changing them is for their creator and the platform (auth/ownership.ts). */
export interface Caller extends Changer {
  actor: string;
  /** Who the caller is when it decides a human step. */
  decider: Decider;
}

export const callerOf = (principal: Principal): Caller => ({
  actor: principal.actor,
  kind: principal.kind,
  agentId: principal.agentId,
  decider: deciderOf(
    {
      kind: principal.kind,
      id: principal.user?.id ?? (principal.kind === 'key' ? principal.keyId! : (principal.agentId ?? principal.actor)),
      actor: principal.actor,
      agentId: principal.agentId,
      role: principal.role,
    },
    principal.permissions.has('approvals:decide'),
  ),
});
