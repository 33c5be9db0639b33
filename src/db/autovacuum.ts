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
