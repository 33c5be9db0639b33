import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Debounced triggers: one row per trigger and debounce key while a burst of its events is under
 * way, holding the last event; the timer starts the run at `fire_at` (quiet for `seconds`, or the
 * burst's `deadline` from `max_wait_s`) and deletes the row.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('trigger_debounces')
    .addColumn('trigger_id', 'text', (c) => c.notNull())
    .addColumn('debounce_key', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('first_at', 'bigint', (c) => c.notNull())
    .addColumn('fire_at', 'bigint', (c) => c.notNull())
    .addColumn('deadline', 'bigint')
    .addPrimaryKeyConstraint('trigger_debounces_pk', ['trigger_id', 'debounce_key'])
    .execute();
  await db.schema.createIndex('trigger_debounces_fire_at').on('trigger_debounces').columns(['fire_at']).execute();
}
