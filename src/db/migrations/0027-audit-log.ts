import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The audit log (audit/tables.ts): a hash chain in `seq` order, which the appender assigns
 * itself under the log's append lock (one more than the head), and the anchor that retention
 * leaves where it trimmed, so verification tells a trimmed start from a tampered one.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('audit_log')
    .addColumn('seq', 'bigint', (c) => c.primaryKey())
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('actor_kind', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('actor_key_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('status', 'integer')
    .addColumn('request_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('prev_hash', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();
  // The list's filters, each ending in seq for its order; the time bounds and retention walk `at`.
  await db.schema.createIndex('audit_log_actor').on('audit_log').columns(['actor_id', 'seq']).execute();
  await db.schema.createIndex('audit_log_action').on('audit_log').columns(['action', 'seq']).execute();
  await db.schema.createIndex('audit_log_resource').on('audit_log').columns(['resource_id', 'seq']).execute();
  await db.schema.createIndex('audit_log_at').on('audit_log').columns(['at']).execute();
  await db.schema
    .createTable('audit_anchor')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('trimmed_at', 'bigint', (c) => c.notNull())
    .execute();
}
