import { sql } from 'kysely';
import type { DatabaseHandle } from './database.js';
import { HOT_TABLES } from './migrations/0043-autovacuum.js';

/**
 * The hot tables autovacuum skips (all of them when it is off server-wide, or those whose
 * `autovacuum_enabled` is false): their dead rows are never reclaimed and the planner's counts go
 * stale. null on SQLite.
 */
export async function tablesWithoutAutovacuum(handle: Pick<DatabaseHandle, 'db' | 'caps'>): Promise<string[] | null> {
  if (handle.caps.kind !== 'postgres') return null;
  const { rows } = await sql<{ relname: string; skipped: boolean }>`
    select c.relname, current_setting('autovacuum') = 'off' or exists (select 1 from unnest(c.reloptions) o where o ~* '^autovacuum_enabled=(false|off|no|f|0)$') as skipped
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relname = any(${[...HOT_TABLES]}::text[])`.execute(handle.db);
  return rows
    .filter((row) => row.skipped)
    .map((row) => row.relname)
    .sort();
}

/**
 * PostgreSQL: vacuums and analyzes each hot table autovacuum skips once it changed past the
 * thresholds migration 0043 gives autovacuum (2% + 1,000 rows changed or dead, 5% + 1,000
 * inserted), as autovacuum would have: without it the planner counts from the table's first
 * rows and index-only scans read the heap (a status filter's count over a million runs went
 * from 9 to 107 ms of CPU). Returns the tables it vacuumed.
 */
export async function vacuumWhereAutovacuumWont(handle: Pick<DatabaseHandle, 'db' | 'caps'>): Promise<string[]> {
  const skipped = await tablesWithoutAutovacuum(handle);
  if (skipped === null || skipped.length === 0) return [];
  const { rows } = await sql<{ relname: string }>`
    select relname from pg_stat_user_tables
    where schemaname = current_schema() and relname = any(${skipped}::text[])
      and (n_dead_tup > 1000 + 0.02 * n_live_tup or n_mod_since_analyze > 1000 + 0.02 * n_live_tup
        or n_ins_since_vacuum > 1000 + 0.05 * n_live_tup)
    order by relname`.execute(handle.db);
  // VACUUM runs outside a transaction: each on a pooled connection of its own.
  for (const { relname } of rows) await sql`vacuum (analyze) ${sql.table(relname)}`.execute(handle.db);
  return rows.map((row) => row.relname);
}
