import type { Generated } from 'kysely';

export interface ClusterNodesTable {
  /** `node_…`, new at every start. */
  id: string;
  /** The server's version (package.json). */
  version: string;
  /** The machine's host name. */
  host: string;
  pid: number;
  started_at: number;
  /** The last heartbeat (every 5 s while up). */
  last_seen_at: number;
  /** Set by a clean shutdown: the node is down at once, not 30 s later. */
  stopped_at: number | null;
}

/** Notifications as rows (SWITCHBOARD_PG_LISTEN=off; db/polling-notifier.ts). */
export interface ClusterNoticesTable {
  seq: Generated<number>;
  channel: string;
  payload: string;
  /** The database's clock, epoch ms. */
  created_at: number;
}

/** Cluster-wide request budgets: what nodes leased of a budget in a window (cluster/rate-limiter.ts). */
export interface RateLimitWindowsTable {
  bucket: string;
  window_start: number;
  /** Requests leased so far; may pass the limit (a lease past it is granted only what was left). */
  leased: number;
}

export interface ClusterTables {
  rate_limit_windows: RateLimitWindowsTable;
  cluster_nodes: ClusterNodesTable;
  cluster_notices: ClusterNoticesTable;
}
