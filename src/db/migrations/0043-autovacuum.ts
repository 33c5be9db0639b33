import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The tables that take most inserts, updates and deletes (messages, the logs, deliveries,
 * rate-limit windows): each churns through its rows, and the retention worker deletes them in
 * batches. /readyz names those of them that autovacuum skips.
 */
export const HOT_TABLES = [
  'messages',
  'message_deliveries',
  'events',
  'runs',
  'run_steps',
  'run_events',
  'webhook_deliveries',
  'webhook_delivery_attempts',
  'trigger_fires',
  'routine_executions',
  'routine_fires',
  'rate_limit_windows',
  'signature_nonces',
  'discovery_heartbeats',
  'cluster_notices',
] as const;

/**
 * PostgreSQL: PostgreSQL's defaults vacuum a table once a fifth of its rows are dead and analyze it
 * once a tenth changed; on a table of millions of queued or logged rows that is hours of bloat
 * and a planner working from stale counts. These tables go at 2% (plus 1,000 rows), and
 * append-mostly ones are vacuumed after inserts too (their visibility map kept current for
 * index-only scans). SQLite has no autovacuum to tune.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  if (caps.kind !== 'postgres') return;
  for (const table of HOT_TABLES) {
    await sql`alter table ${sql.table(table)} set (
      autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
      autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_insert_threshold = 1000,
      autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 1000
    )`.execute(db);
  }
}
