import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Group memberships an admin grants (auth/groups/tables.ts): who reads what is shared with a
 * group. Left empty on upgrade on purpose: the groups agents declared on their capabilities
 * were their own word, so a share with a group opens to no agent until an admin grants it.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('group_members')
    .addColumn('group_name', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('granted_by', 'text', (c) => c.notNull())
    .addColumn('granted_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('group_members_pk', ['group_name', 'agent_id'])
    .execute();
  // Every read of a group share asks for one agent's groups.
  await db.schema.createIndex('group_members_agent').on('group_members').columns(['agent_id', 'group_name']).execute();
}
