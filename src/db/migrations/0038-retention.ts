import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Retention: an index for each delete predicate of the retention worker, so that every batch it
 * deletes is an index range rather than a scan of the table; and the lease that keeps the worker
 * on one node at a time.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  // Finished messages (acknowledged, delivered at most once, cancelled, dead, redriven) by age.
  await db.schema.createIndex('messages_retention').on('messages').columns(['state', 'created_at']).execute();
  // The days a run is kept, from its plan (null: the server's setting).
  await db.schema.alterTable('runs').addColumn('retention_days', 'integer').execute();
  // Finished top-level runs by their plan's retention and end (a child run goes with its root);
  // the same index finds the children.
  await db.schema.createIndex('runs_retention').on('runs').columns(['parent_run_id', 'retention_days', 'completed_at']).execute();
  await db.schema.createIndex('trigger_fires_retention').on('trigger_fires').columns(['created_at']).execute();
  await db.schema.createIndex('routine_executions_retention').on('routine_executions').columns(['completed_at']).execute();
  await db.schema.createIndex('routine_fires_retention').on('routine_fires').columns(['created_at']).execute();
  await db.schema.createIndex('webhook_deliveries_retention').on('webhook_deliveries').columns(['created_at']).execute();
  await db.schema
    .createTable('worker_leases')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
}
