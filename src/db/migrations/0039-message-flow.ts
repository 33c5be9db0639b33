import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Flow control of messages: a priority (0–9, higher first), an ordering key (one message of a
 * key in flight per inbox, in send order) and a fairness key with its rank (the nth pending
 * message of a key is ranked n, so equal priorities take keys in turn).
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .alterTable('messages')
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(4))
    .execute();
  await db.schema.alterTable('messages').addColumn('ordering_key', 'text').execute();
  await db.schema.alterTable('messages').addColumn('fairness_key', 'text').execute();
  await db.schema
    .alterTable('messages')
    .addColumn('fair_rank', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // The dequeue order is now priority, then fairness rank, then arrival: the claim walks this
  // index from its head as it walked (destination, state, seq).
  await db.schema.dropIndex('messages_inbox').execute();
  await db.schema
    .createIndex('messages_inbox')
    .on('messages')
    .columns(['destination', 'state', 'priority desc', 'fair_rank', 'seq'])
    .execute();
  // A claim asks, per keyed candidate, whether an earlier or leased message of its key waits.
  await db.schema
    .createIndex('messages_ordering')
    .on('messages')
    .columns(['destination', 'ordering_key', 'state', 'seq'])
    .where(sql.ref('ordering_key'), 'is not', null)
    .execute();
  // A send with a fairness key asks for the highest rank of its key's pending messages.
  await db.schema
    .createIndex('messages_fairness')
    .on('messages')
    .columns(['destination', 'fairness_key', 'state', 'fair_rank'])
    .where(sql.ref('fairness_key'), 'is not', null)
    .execute();
}
