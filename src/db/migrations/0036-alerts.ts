import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Alert rules (a condition over what happens, the channels to tell) and their alerts: one row
 * per firing, resolved in place, so a rule has at most one firing alert.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('alert_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('condition_type', 'text', (c) => c.notNull())
    .addColumn('condition', 'text', (c) => c.notNull())
    .addColumn('severity', 'text', (c) => c.notNull())
    .addColumn('channels', 'text', (c) => c.notNull())
    .addColumn('repeat_interval_s', 'integer', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('silenced_until', 'bigint')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('alerts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('rule_id', 'text', (c) => c.notNull().references('alert_rules.id').onDelete('cascade'))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('severity', 'text', (c) => c.notNull())
    .addColumn('value', 'double precision', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('fired_at', 'bigint', (c) => c.notNull())
    .addColumn('resolved_at', 'bigint')
    .addColumn('notified_at', 'bigint')
    .addColumn('acknowledged_at', 'bigint')
    .addColumn('acknowledged_by', 'text')
    .execute();
  await db.schema.createIndex('alerts_state').on('alerts').columns(['state', 'id']).execute();
  await db.schema.createIndex('alerts_rule').on('alerts').columns(['rule_id', 'id']).execute();
}
