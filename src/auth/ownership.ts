import { Forbidden } from '../kernel/errors.js';
import { actsForPlatform, type Principal } from './principal.js';

/** Enough of a principal to apply the ownership rule. */
export type Changer = Pick<Principal, 'kind' | 'agentId'>;

/** A shared object as the ownership rule sees it. */
export interface Owned {
  /** What it is, for the message: `plan`, `routine`, `task` … */
  readonly type: string;
  readonly id: string;
  /** The actor that created it (an agent's is its agent id). */
  readonly createdBy: string;
  /** A task's assignee, who may change it as well. */
  readonly assignedTo?: string | null;
}

/**
 * The ownership rule for shared objects (plans, routines, triggers, projects, tasks, runs):
 * every principal with the permission reads and uses them, but an agent changes, deletes,
 * pauses or cancels only those it created, and a task also when it is assigned to it. A
 * principal that acts for the platform (people, operator and admin keys) changes any. Else 403.
 */
export function assertMayChange(changer: Changer, object: Owned): void {
  if (actsForPlatform(changer)) return;
  const agent = changer.agentId;
  if (object.createdBy === agent || (object.assignedTo != null && object.assignedTo === agent)) return;
  const assigned = object.assignedTo === undefined ? '' : ' or is assigned to';
  throw new Forbidden(
    `${object.type} '${object.id}' was created by '${object.createdBy}'; agent '${agent}' may change only what it created${assigned}` +
      ' (operator and admin keys change any)',
  );
}
