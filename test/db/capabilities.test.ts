import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DialectAdapter,
  type QueryCompiler,
} from 'kysely';
import { describe, expect, it } from 'vitest';
import { nextDue, postgresCapabilities, sqliteCapabilities } from '../../src/db/capabilities.js';

interface Tables {
  jobs: { id: string; due_at: number };
}

// Compiles without a connection: the helpers only shape SQL, so each dialect's text is the test.
function compilerOf(adapter: DialectAdapter, compiler: () => QueryCompiler): Kysely<Tables> {
  return new Kysely<Tables>({
    dialect: {
      createAdapter: () => adapter,
      createDriver: () => new DummyDriver(),
      // Never asked: nothing here reads the schema.
      createIntrospector: (db) => new SqliteIntrospector(db),
      createQueryCompiler: compiler,
    },
  });
}
const postgres = compilerOf(new PostgresAdapter(), () => new PostgresQueryCompiler());
const sqlite = compilerOf(new SqliteAdapter(), () => new SqliteQueryCompiler());
const dueJobs = (db: Kysely<Tables>) => db.selectFrom('jobs').select('id').where('due_at', '<=', 5).orderBy('due_at').limit(10);

describe('dialect capabilities', () => {
  it('tells a lost deadlock or serialization race (worth running again) from other errors', () => {
    expect(postgresCapabilities.isTransientConflict({ code: '40P01' })).toBe(true);
    expect(postgresCapabilities.isTransientConflict({ code: '40001' })).toBe(true);
    expect(postgresCapabilities.isTransientConflict({ code: '23505' })).toBe(false);
    expect(postgresCapabilities.isTransientConflict(new Error('boom'))).toBe(false);
    expect(sqliteCapabilities.isTransientConflict({ code: 'SQLITE_BUSY' })).toBe(false);
  });

  it('claims due work with FOR UPDATE SKIP LOCKED on PostgreSQL and leaves the SQLite query as it is', () => {
    expect(postgresCapabilities.claim(dueJobs(postgres)).compile().sql).toBe(
      'select "id" from "jobs" where "due_at" <= $1 order by "due_at" limit $2 for update skip locked',
    );
    expect(sqliteCapabilities.claim(dueJobs(sqlite)).compile().sql).toBe(
      'select "id" from "jobs" where "due_at" <= ? order by "due_at" limit ?',
    );
  });

  it('locks rows with FOR UPDATE (waiting, not skipping) on PostgreSQL and leaves the SQLite query as it is', () => {
    expect(postgresCapabilities.lock(dueJobs(postgres)).compile().sql).toBe(
      'select "id" from "jobs" where "due_at" <= $1 order by "due_at" limit $2 for update',
    );
    expect(sqliteCapabilities.lock(dueJobs(sqlite)).compile().sql).toBe(
      'select "id" from "jobs" where "due_at" <= ? order by "due_at" limit ?',
    );
  });

  it('reads the time of the next due work from a min(…) row, null when nothing is due', () => {
    expect(nextDue(undefined)).toBeNull();
    expect(nextDue({ next: null })).toBeNull();
    expect(nextDue({ next: 0 })).toBe(0);
    // The query builder types min() as string | number | bigint.
    expect(nextDue({ next: '1700000000000' })).toBe(1_700_000_000_000);
  });
});
