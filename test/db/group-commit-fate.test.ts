import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// The shared-fate rule of group commit (docs/architecture.md, "Group commit"), next to the same
// writes without it: a write that fails, fails alone; only when SQLite ends the physical
// transaction itself, or its COMMIT fails, does every write of the group fail with it.
describe.each([
  { dialect: 'sqlite' as const, shared: true },
  { dialect: 'sqlite-no-group-commit' as const, shared: false },
])('the fate of a failing write [$dialect]', ({ dialect, shared }) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  /** A second connection to the same file: it sees only what was committed. */
  let observer: BetterSqlite3.Database;

  beforeEach(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.options());
    await sql`create table notes (body text primary key)`.execute(handle.db);
    await sql`create table parents (id integer primary key)`.execute(handle.db);
    // Checked at COMMIT, not at the INSERT.
    await sql`create table children (id integer primary key, parent_id integer not null references parents (id) deferrable initially deferred)`.execute(
      handle.db,
    );
    observer = new BetterSqlite3(path.join(database.dataDir, 'switchboard.db'), { readonly: true });
  });
  afterEach(async () => {
    observer.close();
    await handle.close();
    await database.drop();
  });

  const committed = () =>
    (observer.prepare('select body from notes order by body').all() as Array<{ body: string }>).map((row) => row.body);
  const insert = (db: DatabaseHandle['db'], body: string) => sql`insert into notes (body) values (${body})`.execute(db);
  /** The writes of one turn of the event loop: a lone write and a transaction on either side of `failing`. */
  const turn = (failing: () => Promise<unknown>) =>
    Promise.allSettled([
      insert(handle.db, 'neighbour-1'),
      handle.db.transaction().execute((trx) => insert(trx, 'neighbour-2')),
      failing(),
      insert(handle.db, 'neighbour-3'),
    ]);

  it('fails a statement that breaks a constraint, or a transaction that throws, alone', async () => {
    await insert(handle.db, 'taken');
    const results = await turn(() =>
      Promise.all([
        insert(handle.db, 'taken'),
        handle.db.transaction().execute(async (trx) => {
          await insert(trx, 'undone');
          throw new Error('changed my mind');
        }),
      ]),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(committed()).toEqual(['neighbour-1', 'neighbour-2', 'neighbour-3', 'taken']);
  });

  it(`fails ${shared ? 'every write of the group' : 'only its own transaction'} when a statement makes SQLite abandon the transaction`, async () => {
    await insert(handle.db, 'taken');
    const results = await turn(() =>
      handle.db.transaction().execute(async (trx) => {
        await insert(trx, 'mine');
        // OR ROLLBACK: on a conflict SQLite rolls back the whole physical transaction (so does a full disk).
        await sql`insert or rollback into notes (body) values ('taken')`.execute(trx);
      }),
    );
    expect(results[2]).toMatchObject({ status: 'rejected', reason: { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' } });
    if (shared) {
      // The neighbours that ran before it in the group are undone with it; the one after it opens the next group.
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'fulfilled']);
      expect(committed()).toEqual(['neighbour-3', 'taken']);
    } else {
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect(committed()).toEqual(['neighbour-1', 'neighbour-2', 'neighbour-3', 'taken']);
    }
  });

  it('answers a read outside a transaction with what is committed, even when the group it saw fails', async () => {
    await insert(handle.db, 'kept');
    const [written, failing, seen] = await Promise.allSettled([
      insert(handle.db, 'lost'),
      handle.db.transaction().execute((trx) => sql`insert into children (parent_id) values (42)`.execute(trx)),
      sql<{ body: string }>`select body from notes order by body`.execute(handle.db),
    ]);
    expect(failing.status).toBe('rejected');
    expect(written.status).toBe(shared ? 'rejected' : 'fulfilled');
    expect(seen.status).toBe('fulfilled');
    const rows = seen.status === 'fulfilled' ? seen.value.rows.map((row) => row.body) : [];
    expect(rows).toEqual(shared ? ['kept'] : ['kept', 'lost']);
  });

  it(`fails ${shared ? 'every write of the group' : 'only its own transaction'} when the COMMIT fails (a deferred foreign key)`, async () => {
    const results = await turn(() =>
      handle.db.transaction().execute((trx) => sql`insert into children (parent_id) values (42)`.execute(trx)),
    );
    expect(results[2]).toMatchObject({ status: 'rejected', reason: { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' } });
    if (shared) {
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
      expect(committed()).toEqual([]);
    } else {
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect(committed()).toEqual(['neighbour-1', 'neighbour-2', 'neighbour-3']);
    }
    expect(observer.prepare('select count(*) as n from children').get()).toEqual({ n: 0 });
  });
});
