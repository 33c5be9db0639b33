import type { Kysely } from 'kysely';

/**
 * Traces: the W3C `traceparent` a message was sent under (its send span's, or what
 * the sender propagated), handed to its receiver; a run's (its `invoke_workflow` span's), which
 * the transitions no request carries (timers, dead letters the reaper makes) continue. Null
 * when nothing traced them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('messages').addColumn('traceparent', 'text').execute();
  await db.schema.alterTable('runs').addColumn('traceparent', 'text').execute();
}
