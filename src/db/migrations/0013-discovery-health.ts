import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  // The health the health worker last announced per agent (agent.health_changed): health is
  // computed from the heartbeat's age and load when read, so a change is found by comparing.
  await db.schema
    .createTable('discovery_health')
    .addColumn('agent_id', 'text', (c) => c.primaryKey())
    .addColumn('health', 'text', (c) => c.notNull())
    .addColumn('changed_at', 'bigint', (c) => c.notNull())
    .execute();
}
