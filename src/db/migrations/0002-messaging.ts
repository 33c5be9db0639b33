import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await caps
    .serialPrimaryKey(db.schema.createTable('messages'), 'seq')
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('event_name', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('thread_id', 'text')
    .addColumn('delivery_semantic', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text')
    // pending (waiting or leased: visible_at says which), acked, delivered (at-most-once,
    // final), dead, redriven, cancelled
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('visible_at', 'bigint', (c) => c.notNull())
    .addColumn('retry_count', 'integer', (c) => c.notNull())
    .addColumn('deliveries', 'integer', (c) => c.notNull())
    .addColumn('max_deliveries', 'integer', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .addColumn('receiver', 'text')
    .addColumn('acked_at', 'bigint')
    .addColumn('output', 'text')
    .addColumn('dead_reason', 'text')
    .addColumn('dead_at', 'bigint')
    .addColumn('origin_kind', 'text')
    .addColumn('origin_ref', 'text')
    .addColumn('redriven_from', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The dequeue: a destination's pending messages in FIFO order. Receive walks this index from
  // the head, so its cost does not grow with the backlog behind it.
  await db.schema.createIndex('messages_inbox').on('messages').columns(['destination', 'state', 'seq']).execute();
  await db.schema.createIndex('messages_thread').on('messages').columns(['thread_id', 'seq']).execute();
  await db.schema.createIndex('messages_expiry').on('messages').columns(['state', 'visible_at']).execute();
  await db.schema
    .createIndex('messages_idempotency')
    .on('messages')
    .columns(['source', 'idempotency_key'])
    .unique()
    .where('idempotency_key', 'is not', null)
    .execute();

  await db.schema
    .createTable('message_deliveries')
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('receiver', 'text', (c) => c.notNull())
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint', (c) => c.notNull())
    // acked | rejected | expired | dead (set when the attempt ends)
    .addColumn('outcome', 'text')
    .addColumn('reason', 'text')
    .addColumn('ended_at', 'bigint')
    .addPrimaryKeyConstraint('message_deliveries_pk', ['message_id', 'attempt'])
    .execute();
  await db.schema.createIndex('message_deliveries_agent').on('message_deliveries').columns(['destination', 'ended_at']).execute();

  await db.schema
    .createTable('messaging_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('messaging_threads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('participants', 'text', (c) => c.notNull())
    .addColumn('turn', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('messaging_threads_session').on('messaging_threads').columns(['session_id', 'id']).execute();

  await db.schema
    .createTable('messaging_subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('wildcard', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('messaging_subscriptions_agent_topic', ['agent_id', 'topic'])
    .execute();
  await db.schema.createIndex('messaging_subscriptions_topic').on('messaging_subscriptions').columns(['topic']).execute();
  await db.schema.createIndex('messaging_subscriptions_wildcard').on('messaging_subscriptions').columns(['wildcard']).execute();
}
