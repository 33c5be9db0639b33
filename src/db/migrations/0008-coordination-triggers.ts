import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('plan_triggers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('plan_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('input_mapping', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull())
    // event triggers: the topic pattern; webhook triggers: the unique path.
    .addColumn('topic', 'text')
    .addColumn('webhook_path', 'text', (c) => c.unique())
    .addColumn('next_fire_at', 'bigint')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('plan_triggers_plan').on('plan_triggers').columns(['plan_id', 'id']).execute();
  await db.schema.createIndex('plan_triggers_due').on('plan_triggers').columns(['type', 'enabled', 'next_fire_at']).execute();

  // The fire ledger: a schedule slot is unique per trigger, so restarts and nodes fire it once.
  await db.schema
    .createTable('trigger_fires')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('trigger_id', 'text', (c) => c.notNull())
    .addColumn('scheduled_for', 'bigint')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('run_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('trigger_fires_slot', ['trigger_id', 'scheduled_for'])
    .execute();
  await db.schema.createIndex('trigger_fires_trigger').on('trigger_fires').columns(['trigger_id', 'id']).execute();
}
