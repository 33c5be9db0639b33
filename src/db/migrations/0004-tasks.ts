import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // The foreign key settles a task created while its project is being deleted.
    .addColumn('project_id', 'text', (c) => c.references('projects.id'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('assigned_to', 'text')
    .addColumn('priority', 'text', (c) => c.notNull())
    // How many of the task's dependencies are not done: `blocked` is open_dependencies > 0.
    // Kept in the transactions that change it, so the blocked filter is an index lookup and
    // the 1 → 0 step (the unblocking) is seen by exactly one transaction.
    .addColumn('open_dependencies', 'integer', (c) => c.notNull())
    // The ids in task_dependencies for this task, oldest first, as a JSON array: kept with the
    // edges so reading a task or a page of tasks needs no second query.
    .addColumn('depends_on', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // The list filters, each ending in id for the stable order.
  await db.schema.createIndex('tasks_project_status').on('tasks').columns(['project_id', 'status', 'id']).execute();
  await db.schema.createIndex('tasks_status').on('tasks').columns(['status', 'id']).execute();
  await db.schema.createIndex('tasks_assigned').on('tasks').columns(['assigned_to', 'status', 'id']).execute();

  await db.schema
    .createTable('task_dependencies')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull().references('tasks.id'))
    .addColumn('depends_on', 'text', (c) => c.notNull().references('tasks.id'))
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('task_dependencies_pair', ['task_id', 'depends_on'])
    .execute();
  await db.schema.createIndex('task_dependencies_depends_on').on('task_dependencies').columns(['depends_on', 'task_id']).execute();

  await db.schema
    .createTable('task_comments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull().references('tasks.id'))
    .addColumn('author', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('task_comments_task').on('task_comments').columns(['task_id', 'id']).execute();

  // Keyed by (task_id, id), the order it is read in, with no separate key on id (ids are
  // unique by construction): every write transaction inserts an entry, and each index is one
  // more page written per commit on SQLite.
  await db.schema
    .createTable('task_activity')
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text', (c) => c.notNull().references('tasks.id'))
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('from_value', 'text')
    .addColumn('to_value', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('task_activity_pk', ['task_id', 'id'])
    .execute();
}
