import { ROLES, type Role } from '../auth/index.js';

/**
 * Who decides a human step. A step's `approvers` entries name `user:<username>`,
 * `role:<role>` or `agent:<agent_id>`; a bare entry is an agent id (as plans always wrote them).
 */
export interface Decider {
  /** What the decision records: the principal's kind and id. */
  kind: 'admin' | 'agent' | 'key' | 'user' | 'system';
  id: string;
  /** The event log's actor; a user's is `user:<username>`, as approvers name them. */
  actor: string;
  agentId: string | null;
  role: Role | null;
  /** Holds approvals:decide. */
  mayDecide: boolean;
  /** Decides any step, even one whose approvers name others (the admin role). */
  overrides: boolean;
}

const AGENT = 'agent:';
const USER = 'user:';

/** The people approvers name (auth's users): an approval link made for a user decides as them, as they are now. */
export interface People {
  findByName(username: string): Promise<{ id: string; username: string; role: Role; disabled: boolean } | null>;
}

/**
 * A decider from who they are: `mayDecide` when they hold approvals:decide; an admin overrides a
 * step's approvers. The one place a Decider is built (callers' and approval links' users alike).
 */
export function deciderOf(who: Pick<Decider, 'kind' | 'id' | 'actor' | 'agentId' | 'role'>, mayDecide: boolean): Decider {
  return { ...who, mayDecide, overrides: who.role === 'admin' };
}

/** A user as a decider, with their role's permissions (what a session of theirs would hold). */
export async function personDecider(people: People, username: string): Promise<Decider | null> {
  const user = await people.findByName(username);
  if (!user || user.disabled) return null;
  return deciderOf(
    { kind: 'user', id: user.id, actor: `${USER}${user.username}`, agentId: null, role: user.role },
    ROLES[user.role].includes('approvals:decide'),
  );
}

/** The username a `user:<username>` entry names, else null. */
export function approverUser(entry: string): string | null {
  return entry.startsWith(USER) ? entry.slice(USER.length) : null;
}

/** The agent an entry names, or null for a `user:` or `role:` entry. */
export function approverAgent(entry: string): string | null {
  if (entry.startsWith(AGENT)) return entry.slice(AGENT.length);
  return entry.startsWith(USER) || entry.startsWith('role:') ? null : entry;
}

/** The agents among a step's approvers (who get its link in their inbox, and read its event). */
export function approverAgents(approvers: readonly string[]): string[] {
  return approvers.map(approverAgent).filter((agent): agent is string => agent !== null);
}

/**
 * Whether `decider` may decide a step with these approvers: an agent the step names needs no
 * permission; anyone else needs approvals:decide, and, when the step names approvers, to be
 * named (a user by `user:<username>`, or by role) or to override.
 */
export function decisionRefusal(approvers: readonly string[], decider: Decider): string | null {
  const namedAgent = decider.agentId !== null && approverAgents(approvers).includes(decider.agentId);
  if (namedAgent) return null;
  if (!decider.mayDecide)
    return "Missing permission 'approvals:decide': only people (approver, operator and admin keys) and the agents a step names decide human steps";
  if (approvers.length === 0 || decider.overrides) return null;
  if (decider.role !== null && approvers.includes(`role:${decider.role}`)) return null;
  if (decider.kind === 'user' && approvers.includes(decider.actor)) return null;
  return `Only ${approvers.join(', ')} (or an admin) may decide this step`;
}
