import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * An index for each list filter that had none walking the list's order, so a first page stops
 * after `limit` rows of the filter instead of sorting all its matches: runs of a plan and by
 * start time, tasks by project, assignee, priority and blocked, and audit entries by outcome.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.createIndex('runs_plan_id').on('runs').columns(['plan_id', 'id']).execute();
  await db.schema.createIndex('runs_started').on('runs').columns(['started_at']).execute();
  await db.schema.createIndex('tasks_project').on('tasks').columns(['project_id', 'id']).execute();
  await db.schema.createIndex('tasks_assignee').on('tasks').columns(['assigned_to', 'id']).execute();
  await db.schema.createIndex('tasks_priority').on('tasks').columns(['priority', 'id']).execute();
  await db.schema.createIndex('tasks_open_dependencies').on('tasks').columns(['open_dependencies', 'id']).execute();
  await db.schema.createIndex('audit_log_outcome').on('audit_log').columns(['outcome', 'seq']).execute();
}
