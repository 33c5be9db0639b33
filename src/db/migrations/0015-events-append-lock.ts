import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * PostgreSQL: every insert into `events` first takes the log's append lock (held to the commit)
 * in a statement trigger, before any row gets its seq, so appends commit in seq order without a
 * round trip of their own for the lock (it was 12.7% of coordination's steps/s, bench/RESULTS.md
 * "Events"). SQLite serializes writers already.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  if (caps.kind !== 'postgres') return;
  await sql`
    CREATE FUNCTION events_append_lock() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock(hashtext('events:append'));
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER events_append_lock BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION events_append_lock()`.execute(db);
}
