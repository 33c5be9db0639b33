import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The bursts of debounced triggers and routines share one table: `owner_kind` ('trigger' or
 * 'routine') and `owner_id` name what a burst starts. The bursts under way are kept.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('debounces')
    .addColumn('owner_kind', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('debounce_key', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('first_at', 'bigint', (c) => c.notNull())
    .addColumn('fire_at', 'bigint', (c) => c.notNull())
    .addColumn('deadline', 'bigint')
    .addPrimaryKeyConstraint('debounces_pk', ['owner_kind', 'owner_id', 'debounce_key'])
    .execute();
  await db.schema.createIndex('debounces_owner_kind_fire_at').on('debounces').columns(['owner_kind', 'fire_at']).execute();
  await sql`INSERT INTO debounces (owner_kind, owner_id, debounce_key, event, first_at, fire_at, deadline)
    SELECT 'trigger', trigger_id, debounce_key, event, first_at, fire_at, deadline FROM trigger_debounces`.execute(db);
  await db.schema.dropTable('trigger_debounces').execute();
}
