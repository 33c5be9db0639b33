import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// Group commit is how the SQLite driver writes (PostgreSQL commits each transaction itself), so
// these tests are SQLite's alone; every HTTP test runs its writes through it as well.
describe('SQLite group commit', () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  /** False once a test closed the handle itself. */
  let handleOpen: boolean;
  /** A second connection to the same file: it sees only what was committed. */
  let observer: BetterSqlite3.Database;

  beforeEach(async () => {
    database = await createTestDatabase('sqlite');
    handle = openDatabase({ databaseUrl: null, dataDir: database.dataDir });
    handleOpen = true;
    await sql`create table notes (id integer primary key, body text not null unique)`.execute(handle.db);
    observer = new BetterSqlite3(path.join(database.dataDir, 'switchboard.db'), { readonly: true });
  });
  afterEach(async () => {
    observer.close();
    if (handleOpen) await handle.close();
    await database.drop();
  });

  const committed = () => (observer.prepare('select body from notes order by id').all() as Array<{ body: string }>).map((row) => row.body);
  const insert = (db: DatabaseHandle['db'], body: string) => sql`insert into notes (body) values (${body})`.execute(db);
  const stats = () => handle.writeStats!();

  it('commits the writes of one turn of the event loop together, each answered once it is visible', async () => {
    const before = stats();
    const seen: string[][] = [];
    let seenByTheLast: string[] | undefined;
    const writes = [
      ...Array.from({ length: 5 }, (_, i) => insert(handle.db, `lone-${i}`)),
      ...Array.from({ length: 20 }, (_, i) =>
        handle.db.transaction().execute(async (trx) => {
          await insert(trx, `tx-${i}`);
          await insert(trx, `tx-${i}-second`);
          // The last of the turn: every write before it has run, and none is committed yet.
          if (i === 19) seenByTheLast = committed();
        }),
      ),
    ].map((write) => write.then(() => seen.push(committed())));
    await Promise.all(writes);

    expect(seenByTheLast).toEqual([]);

    expect(stats().commits - before.commits).toBe(1);
    expect(stats().writes - before.writes).toBe(25);
    expect(committed()).toHaveLength(45);
    // Every writer was answered after its rows (all of them) were committed.
    for (const rows of seen) expect(rows).toHaveLength(45);
  });

  it('rolls back a failed transaction or statement alone and commits the rest of its group', async () => {
    const results = await Promise.allSettled([
      insert(handle.db, 'kept-1'),
      handle.db.transaction().execute(async (trx) => {
        await insert(trx, 'undone');
        throw new Error('changed my mind');
      }),
      insert(handle.db, 'kept-1'), // unique violation: only this statement fails
      handle.db.transaction().execute((trx) => insert(trx, 'kept-2')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('changed my mind');
    expect((results[2] as PromiseRejectedResult).reason.code).toBe('SQLITE_CONSTRAINT_UNIQUE');
    expect(committed()).toEqual(['kept-1', 'kept-2']);
  });

  it('fails every write of a group SQLite abandons, leaks nothing of it, and goes on with the next', async () => {
    await insert(handle.db, 'existing');
    const results = await Promise.allSettled([
      insert(handle.db, 'lost-1'),
      handle.db.transaction().execute(async (trx) => {
        await insert(trx, 'lost-2');
        // OR ROLLBACK: on a conflict SQLite rolls back the whole transaction, the group's.
        await sql`insert or rollback into notes (body) values ('existing')`.execute(trx).catch(() => undefined);
        // The transaction is gone: what it runs next must not be written on its own.
        await insert(trx, 'after-the-rollback');
      }),
      handle.db.transaction().execute((trx) => insert(trx, 'next-group')),
    ]);
    expect(results[0]).toMatchObject({ status: 'rejected', reason: { code: 'SQLITE_CONSTRAINT_UNIQUE' } });
    expect(results[1]).toMatchObject({ status: 'rejected', reason: { code: 'SQLITE_CONSTRAINT_UNIQUE' } });
    expect(results[2]).toMatchObject({ status: 'fulfilled' });
    expect(committed()).toEqual(['existing', 'next-group']);
  });

  it('answers a read at once when no write is pending, and after the commit of the writes it saw', async () => {
    await insert(handle.db, 'first');
    const order: string[] = [];
    setImmediate(() => order.push('turn ended'));
    const idleRead = sql<{ n: number }>`select count(*) as n from notes`
      .execute(handle.db)
      .then((r) => order.push(`idle read ${r.rows[0]!.n}`));
    await idleRead;
    expect(order).toEqual(['idle read 1']);

    const write = insert(handle.db, 'second');
    const read = sql<{ n: number }>`select count(*) as n from notes`.execute(handle.db).then((r) => {
      order.push(`read ${r.rows[0]!.n}`);
      return committed();
    });
    await write;
    expect(await read).toEqual(['first', 'second']);
    expect(order).toEqual(['idle read 1', 'turn ended', 'read 2']);
  });

  it('waits for a write lock held elsewhere without stopping the event loop, and gives up after 5 s', async () => {
    // A second server in this process: both open a group in the same turn, and the one whose
    // BEGIN finds the file locked can have it only after the other's COMMIT, one turn later.
    const second = openDatabase({ databaseUrl: null, dataDir: database.dataDir });
    try {
      await Promise.all([insert(handle.db, 'from-one'), insert(second.db, 'from-two')]);
      expect(committed().sort()).toEqual(['from-one', 'from-two']);
    } finally {
      await second.close();
    }

    // Another connection holds the lock, and gives it up only from a timer.
    const holder = new BetterSqlite3(path.join(database.dataDir, 'switchboard.db'));
    try {
      holder.exec('begin immediate');
      // Real time: the driver's busy wait on the file lock is what is under test.
      setTimeout(() => holder.exec('commit'), 100);
      await insert(handle.db, 'after-the-holder');
      expect(committed()).toContain('after-the-holder');

      holder.exec('begin immediate');
      const started = Date.now();
      await expect(insert(handle.db, 'never')).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
      holder.exec('rollback');
      await insert(handle.db, 'once-free');
      expect(committed()).not.toContain('never');
      expect(committed()).toContain('once-free');
    } finally {
      holder.close();
    }
  }, 15_000);

  it('commits a group still open when the database closes', async () => {
    const write = insert(handle.db, 'last words');
    await Promise.resolve();
    const closing = handle.close();
    await write;
    await closing;
    handleOpen = false;
    expect(committed()).toEqual(['last words']);
  });
});
