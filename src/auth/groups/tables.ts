/**
 * Group memberships an admin granted (migration 0022): what a share with a group opens. The
 * groups agents declare on their capabilities (discovery) only route and find agents.
 */
export interface GroupMembersTable {
  group_name: string;
  agent_id: string;
  /** The actor that granted it. */
  granted_by: string;
  granted_at: number;
}

/** The access groups' tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface AccessGroupsTables {
  group_members: GroupMembersTable;
}
