/** One entry of the audit log (audit/chain.ts says how `hash` is made). */
export interface AuditLogTable {
  /** Chain order: the head's seq + 1, assigned under the append lock. */
  seq: number;
  id: string;
  at: number;
  actor_kind: string;
  actor_id: string | null;
  actor_key_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  outcome: string;
  /** The HTTP status of a denied or failed request; null for a change that was made. */
  status: number | null;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
  /** How many denials one entry stands for (1 for everything else). */
  count: number;
  prev_hash: string;
  hash: string;
}

/** Where retention last trimmed the log: the last trimmed entry's seq and hash (one row, id 1). */
export interface AuditAnchorTable {
  id: number;
  seq: number;
  hash: string;
  trimmed_at: number;
}

/** The audit tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface AuditTables {
  audit_log: AuditLogTable;
  audit_anchor: AuditAnchorTable;
}
