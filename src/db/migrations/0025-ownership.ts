import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Ownership of shared objects (auth/ownership.ts): an agent changes only what it created.
 * Plans, triggers, runs, routines, projects and tasks have recorded their creator since their
 * tables were made, and those records stand: an agent keeps changing what it made before the
 * upgrade. Webhooks did not record one; theirs is 'admin': no agent may have that id
 * (kernel/agent-ids.ts reserves it), so a creator nobody knows never reads as some agent's and
 * only operators and admins change the row. The default stays for the same reason.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .alterTable('webhooks')
    .addColumn('created_by', 'text', (c) => c.notNull().defaultTo('admin'))
    .execute();
}
