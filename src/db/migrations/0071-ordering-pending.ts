import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The ordering-key index holds only pending messages, by key and arrival: its readers (the
 * claim's probe, the held count) ask only for those. An acknowledgement no longer moves an entry
 * inside its key's range (state was a column of it); it drops the entry, and a claim, which
 * leaves a pending message pending, writes none on SQLite (state is no longer in its SET).
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.dropIndex('messages_ordering').execute();
  await db.schema
    .createIndex('messages_ordering')
    .on('messages')
    .columns(['destination', 'ordering_key', 'seq'])
    .where(sql<boolean>`ordering_key is not null and state = 'pending'`)
    .execute();
}
