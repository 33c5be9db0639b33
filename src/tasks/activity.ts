import type { Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { Activity, ActivityAction, UpdateTaskBody } from './schemas.js';
import type { ActivityRow, TaskRow, TasksStore } from './store.js';

/** One field-level change, before it becomes an activity entry. */
export interface Change {
  action: ActivityAction;
  from: string | null;
  to: string | null;
}

function toActivity(row: ActivityRow): Activity {
  return {
    id: row.id,
    task_id: row.task_id,
    actor: row.actor,
    action: row.action as ActivityAction,
    from: row.from_value,
    to: row.to_value,
    created_at: iso(row.created_at),
  };
}

/** The PATCH fields, in the order their activity entries are written, with their action. */
export const PATCHABLE: [keyof UpdateTaskBody & keyof TaskRow, ActivityAction][] = [
  ['title', 'title_changed'],
  ['description', 'description_changed'],
  ['status', 'status_changed'],
  ['priority', 'priority_changed'],
  ['project_id', 'project_changed'],
  ['assigned_to', 'assigned'],
];

/** The field changes a PATCH makes to a task (fields sent with their current value are no change). */
export function diffTask(before: Pick<TaskRow, (typeof PATCHABLE)[number][0]>, patch: UpdateTaskBody): Change[] {
  const changes: Change[] = [];
  for (const [field, action] of PATCHABLE) {
    const next = patch[field];
    if (next === undefined || next === before[field]) continue;
    changes.push({ action, from: before[field], to: next });
  }
  return changes;
}

/**
 * A task's activity log: one entry per field a change moves (who, what, from, to), written in
 * the change's transaction, so the log is complete. diffTask says which fields a PATCH moves.
 */
export class ActivityLog {
  constructor(private readonly deps: { store: TasksStore; clock: Clock }) {}

  async record(tx: Tx, taskId: string, actor: string, changes: Change[]): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.store.insertActivity(
      tx,
      changes.map((c) => ({
        id: newId('act', now),
        task_id: taskId,
        actor,
        action: c.action,
        from_value: c.from,
        to_value: c.to,
        created_at: now,
      })),
    );
  }

  /** A page of the task's entries (the caller has checked that the task exists). */
  async list(tx: Tx, taskId: string, window: Page): Promise<Paged<Activity>> {
    const page = await this.deps.store.listActivity(tx, taskId, window);
    return mapPage(page, toActivity);
  }
}
