import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuthStore } from '../../src/auth/store.js';
import { openDatabase, type DatabaseHandle, type Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { atomically } from '../../src/db/tx.js';
import { autocommit, type Tx } from '../../src/kernel/tx.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

/**
 * What a Tx rules out, checked by tsc (this function never runs): a store method cannot be
 * called without one, nor with a Kysely handle in its place, and a Tx runs no SQL itself.
 */
export function typeChecks(store: AuthStore, db: Db, tx: Tx): void {
  // @ts-expect-error the transaction cannot be left out
  void store.findKey('key_1');
  // @ts-expect-error a Kysely handle is not a Tx
  void store.findKey(db, 'key_1');
  // @ts-expect-error nor is a Kysely transaction
  void db.transaction().execute((trx) => store.findKey(trx, 'key_1'));
  // @ts-expect-error a Tx offers no query builder
  void tx.selectFrom('settings');
  // @ts-expect-error nor can it stand in for a Kysely handle
  const handle: Db = autocommit;
  void handle;
  void store.findKey(tx, 'key_1');
  void store.findKey(autocommit, 'key_1');
}

describeEachDialect('Tx and inTransaction', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let store: AuthStore;
  let n = 0;
  const name = () => `tx-test-${++n}`;

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
    await migrateToLatest(handle);
    store = new AuthStore(handle.db, handle.caps);
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });

  it('commits the work when it resolves, and returns its result', async () => {
    const setting = name();
    const result = await store.inTransaction(async (tx) => {
      await store.ensureSetting(tx, setting, 'kept', 1);
      return 'done';
    });
    expect(result).toBe('done');
    expect(await store.getSetting(autocommit, setting)).toBe('kept');
  });

  it('rolls every statement of the work back when it throws, and rethrows', async () => {
    const setting = name();
    const failure = new Error('changed my mind');
    await expect(
      store.inTransaction(async (tx) => {
        await store.ensureSetting(tx, setting, 'dropped', 1);
        expect(await store.getSetting(tx, setting)).toBe('dropped');
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await store.getSetting(autocommit, setting)).toBeUndefined();
  });

  it('autocommit commits each statement on its own', async () => {
    const setting = name();
    await store.ensureSetting(autocommit, setting, 'alone', 1);
    expect(await store.getSetting(autocommit, setting)).toBe('alone');
  });

  it('atomically joins the caller transaction (and its rollback), or opens one under autocommit', async () => {
    const joined = name();
    const own = name();
    const insert = (tx: Tx, setting: string) =>
      atomically(tx, handle.db, async (trx) => {
        await trx.insertInto('settings').values({ name: setting, value: 'v', updated_at: 1 }).execute();
      });
    await expect(
      store.inTransaction(async (tx) => {
        await insert(tx, joined);
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    expect(await store.getSetting(autocommit, joined)).toBeUndefined();
    await insert(autocommit, own);
    expect(await store.getSetting(autocommit, own)).toBe('v');
  });
});
