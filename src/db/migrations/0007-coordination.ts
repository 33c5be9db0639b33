import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('plans')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('alias', 'text', (c) => c.notNull().unique())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  // Every version a plan had: runs pin one, GET …/versions/{n} reads one.
  await db.schema
    .createTable('plan_versions')
    .addColumn('plan_id', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('alias', 'text', (c) => c.notNull())
    .addColumn('definition', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('plan_versions_pk', ['plan_id', 'version'])
    .execute();

  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('plan_id', 'text', (c) => c.notNull())
    .addColumn('plan_version', 'integer', (c) => c.notNull())
    // The pinned plan, copied so a run outlives edits and deletion of its plan.
    .addColumn('definition', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('event', 'text')
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('adaptive', 'text')
    .addColumn('revisions', 'text', (c) => c.notNull())
    .addColumn('parent_run_id', 'text')
    .addColumn('parent_step_id', 'text')
    .addColumn('depth', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    // The earliest timer among its steps (retry backoff, wait, timeout): the engine's wake-up.
    .addColumn('wake_at', 'bigint')
    // Changes with every saved transition: a node may reuse the steps it saved last only while it matches.
    .addColumn('revision', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('runs_wake').on('runs').columns(['wake_at']).execute();
  await db.schema.createIndex('runs_plan').on('runs').columns(['plan_id', 'status', 'id']).execute();
  await db.schema.createIndex('runs_status').on('runs').columns(['status', 'id']).execute();

  await db.schema
    .createTable('run_steps')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('step_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    // for_each items: the group step and the item's index (-1 for plan steps).
    .addColumn('parent_step_id', 'text')
    .addColumn('item_index', 'integer', (c) => c.notNull())
    .addColumn('item', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('agent_id', 'text')
    // agent steps routed by capability: which one (plan generation estimates durations from it).
    .addColumn('capability', 'text')
    .addColumn('message_id', 'text')
    .addColumn('child_run_id', 'text')
    .addColumn('input', 'text')
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('wake_at', 'bigint')
    .addColumn('wait_topic', 'text')
    .addColumn('detail', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addPrimaryKeyConstraint('run_steps_pk', ['run_id', 'step_id'])
    .execute();
  // Published events find the steps waiting for them.
  await db.schema.createIndex('run_steps_waiting').on('run_steps').columns(['wait_topic']).execute();
  await db.schema.createIndex('run_steps_capability').on('run_steps').columns(['capability', 'completed_at']).execute();

  await caps
    .serialPrimaryKey(db.schema.createTable('run_events'), 'seq')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('step_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('detail', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('run_events_run').on('run_events').columns(['run_id', 'seq']).execute();
}
