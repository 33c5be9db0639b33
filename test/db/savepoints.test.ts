import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

// Kysely's controlled transactions (`db.startTransaction()`) with savepoints, on both SQLite
// drivers and PostgreSQL. Under group commit the transaction is itself a savepoint in its
// group, and the caller's savepoints nest inside it.
describeEachDialect('savepoints', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.options());
    await sql`create table savepoint_notes (body text primary key)`.execute(handle.db);
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });
  beforeEach(async () => {
    await sql`delete from savepoint_notes`.execute(handle.db);
  });

  const insert = (db: Kysely<any>, body: string) => sql`insert into savepoint_notes (body) values (${body})`.execute(db);
  const bodies = async () =>
    (await sql<{ body: string }>`select body from savepoint_notes order by body`.execute(handle.db)).rows.map((row) => row.body);

  it('rolls back to a savepoint, keeps what came before it, and commits the rest', async () => {
    const trx = await handle.db.startTransaction().execute();
    await insert(trx, 'before');
    const inside = await trx.savepoint('probe').execute();
    await insert(inside, 'undone');
    const back = await inside.rollbackToSavepoint('probe').execute();
    await insert(back, 'after');
    await (await back.releaseSavepoint('probe').execute()).commit().execute();
    expect(await bodies()).toEqual(['after', 'before']);
  });

  it('lets a transaction go on after a failed statement once it rolls back to a savepoint', async () => {
    await insert(handle.db, 'taken');
    const trx = await handle.db.startTransaction().execute();
    await insert(trx, 'mine');
    const inside = await trx.savepoint('attempt').execute();
    // PostgreSQL aborts the whole transaction on an error until it rolls back to a savepoint.
    await expect(insert(inside, 'taken')).rejects.toThrow();
    const back = await inside.rollbackToSavepoint('attempt').execute();
    await insert(back, 'instead');
    await back.commit().execute();
    expect(await bodies()).toEqual(['instead', 'mine', 'taken']);
  });

  it('undoes a released savepoint with the transaction that rolls back', async () => {
    const trx = await handle.db.startTransaction().execute();
    await insert(trx, 'gone-1');
    const inside = await trx.savepoint('probe').execute();
    await insert(inside, 'gone-2');
    await (await inside.releaseSavepoint('probe').execute()).rollback().execute();
    expect(await bodies()).toEqual([]);
  });

  it('keeps each transaction’s savepoints its own among concurrent writers', async () => {
    const withSavepoint = async (body: string) => {
      const trx = await handle.db.startTransaction().execute();
      await insert(trx, body);
      const inside = await trx.savepoint('probe').execute();
      await insert(inside, `${body}-undone`);
      await (await inside.rollbackToSavepoint('probe').execute()).commit().execute();
    };
    await Promise.all([
      withSavepoint('a'),
      insert(handle.db, 'lone'),
      withSavepoint('b'),
      handle.db.transaction().execute((trx) => insert(trx, 'plain')),
    ]);
    expect(await bodies()).toEqual(['a', 'b', 'lone', 'plain']);
  });

  it.runIf(dialect === 'sqlite')('refuses the savepoint name that group commit gives the transaction itself', async () => {
    const trx = await handle.db.startTransaction().execute();
    await expect(trx.savepoint('switchboard_tx').execute()).rejects.toThrow(/savepoint name 'switchboard_tx' is reserved/);
    await trx.rollback().execute();
  });
});
