import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  // seq is the log's order and its ids (evt_ + seq): no id column, no second unique index.
  await caps
    .serialPrimaryKey(db.schema.createTable('events'), 'seq')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('readers', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The list filters, each ending in seq for the log's order. A stream (and a webhook reading
  // "after cursor X") walks the primary key from its cursor instead.
  await db.schema.createIndex('events_type').on('events').columns(['type', 'seq']).execute();
  await db.schema.createIndex('events_subject').on('events').columns(['subject', 'seq']).execute();
}
