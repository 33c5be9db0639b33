export interface DiscoveryCapabilitiesTable {
  id: string;
  agent_id: string;
  capability: string;
  /** JSON object */
  metadata: string;
  /** JSON array of group names */
  groups: string;
  /** Messages the agent may hold leased at once (null: no limit). */
  max_concurrency: number | null;
  created_at: number;
  updated_at: number;
}

export interface DiscoveryCapabilityGroupsTable {
  capability_id: string;
  group_name: string;
  agent_id: string;
}

export interface DiscoveryHeartbeatsTable {
  agent_id: string;
  load: number | null;
  /** JSON object */
  metadata: string;
  started_at: number;
  last_heartbeat_at: number;
}

/** The health last announced for an agent (agent.health_changed), by the health worker. */
export interface DiscoveryHealthTable {
  agent_id: string;
  health: string;
  changed_at: number;
}

export interface DiscoveryCountersTable {
  name: string;
  value: number;
}

export interface DiscoveryChangesTable {
  capability_id: string;
  seq: number;
  changed_at: number;
}

/** The discovery tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface DiscoveryTables {
  discovery_capabilities: DiscoveryCapabilitiesTable;
  discovery_capability_groups: DiscoveryCapabilityGroupsTable;
  discovery_heartbeats: DiscoveryHeartbeatsTable;
  discovery_health: DiscoveryHealthTable;
  discovery_counters: DiscoveryCountersTable;
  discovery_changes: DiscoveryChangesTable;
}
