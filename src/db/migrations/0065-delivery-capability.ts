import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The capability a message was sent for (a capability-routed plan step), kept on the message
 * and on each of its delivery attempts, so routing can read an agent's success and latency for
 * one capability: its last deliveries of that capability, backward on the index.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('messages').addColumn('capability', 'text').execute();
  await db.schema.alterTable('message_deliveries').addColumn('capability', 'text').execute();
  await db.schema
    .createIndex('message_deliveries_agent_capability')
    .on('message_deliveries')
    .columns(['destination', 'capability', 'ended_at'])
    .where('capability', 'is not', null)
    .execute();
}
