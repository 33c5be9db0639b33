import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('routines')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('trigger_type', 'text', (c) => c.notNull())
    .addColumn('cron_expression', 'text')
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('target_agent', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('catch_up', 'text', (c) => c.notNull())
    .addColumn('overlap', 'text', (c) => c.notNull())
    .addColumn('timeout_seconds', 'integer', (c) => c.notNull())
    .addColumn('webhook_token_hash', 'text', (c) => c.unique())
    .addColumn('next_run_at', 'bigint')
    .addColumn('last_run_at', 'bigint')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // The scheduler's question: which enabled cron routines are due, earliest first.
  await db.schema.createIndex('routines_due').on('routines').columns(['enabled', 'trigger_type', 'next_run_at']).execute();

  await db.schema
    .createTable('routine_executions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('routine_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('scheduled_for', 'bigint')
    .addColumn('message_id', 'text')
    .addColumn('output', 'text')
    .addColumn('deadline_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema.createIndex('routine_executions_routine').on('routine_executions').columns(['routine_id', 'status', 'id']).execute();
  await db.schema.createIndex('routine_executions_deadline').on('routine_executions').columns(['status', 'deadline_at']).execute();

  await db.schema
    .createTable('routine_fires')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('routine_id', 'text', (c) => c.notNull())
    .addColumn('scheduled_for', 'bigint', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('execution_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('routine_fires_slot', ['routine_id', 'scheduled_for'])
    .execute();
}
