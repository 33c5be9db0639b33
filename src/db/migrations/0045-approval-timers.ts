import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The reminders and escalations of human steps waiting for people: one row per timer of a
 * step's wait, deleted by the node that fires it (so it fires once, across restarts and nodes).
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('approval_timers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('step_id', 'text', (c) => c.notNull())
    .addColumn('wait_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('due_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('approval_timers_due').on('approval_timers').columns(['due_at']).execute();
  await db.schema.createIndex('approval_timers_step').on('approval_timers').columns(['run_id', 'step_id']).execute();
}
