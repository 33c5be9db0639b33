import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Flow limits. An agent's capability may cap the messages the agent holds leased at once
 * (max_concurrency). Run flow control: a run's priority, the concurrency and rate keys its plan's limits count it
 * under, why it is queued, and when it was let through (what a rate limit counts). The index finds
 * a plan's queued and active runs of a key without reading its finished ones.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .alterTable('runs')
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(4))
    .execute();
  await db.schema.alterTable('runs').addColumn('concurrency_key', 'text').execute();
  await db.schema.alterTable('runs').addColumn('rate_key', 'text').execute();
  await db.schema.alterTable('runs').addColumn('blocked_by', 'text').execute();
  await db.schema.alterTable('runs').addColumn('admitted_at', 'bigint').execute();
  await db.schema.createIndex('runs_limits').on('runs').columns(['plan_id', 'status', 'concurrency_key']).execute();
  await db.schema.alterTable('discovery_capabilities').addColumn('max_concurrency', 'integer').execute();
  await db.schema.createIndex('runs_admitted').on('runs').columns(['plan_id', 'rate_key', 'admitted_at']).execute();
}
