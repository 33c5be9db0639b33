import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { databaseOptions, openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, useTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

const pragma = async (handle: DatabaseHandle, name: string) =>
  Object.values((await sql.raw<Record<string, unknown>>(`pragma ${name}`).execute(handle.db)).rows[0]!)[0];

describe('SQLite connection settings', () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    handle = openDatabase({ databaseUrl: null, dataDir: database.dataDir });
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });

  it('writes ahead, syncs at checkpoints, checks foreign keys and keeps up to 64 MiB of pages', async () => {
    expect(await pragma(handle, 'journal_mode')).toBe('wal');
    expect(await pragma(handle, 'synchronous')).toBe(1); // NORMAL
    expect(await pragma(handle, 'foreign_keys')).toBe(1);
    expect(await pragma(handle, 'cache_size')).toBe(-64 * 1024); // KiB
  });

  it('syncs every commit with SWITCHBOARD_SQLITE_SYNCHRONOUS=full, and commits each write alone with SWITCHBOARD_SQLITE_GROUP_COMMIT=off', async () => {
    const config = loadConfig({
      SWITCHBOARD_DATA_DIR: database.dataDir,
      SWITCHBOARD_SQLITE_SYNCHRONOUS: 'full',
      SWITCHBOARD_SQLITE_GROUP_COMMIT: 'off',
    });
    const other = openDatabase(databaseOptions(config));
    try {
      expect(await pragma(other, 'synchronous')).toBe(2); // FULL
      await sql`create table if not exists probe (id integer primary key)`.execute(other.db);
      const before = other.writeStats!();
      await Promise.all(Array.from({ length: 5 }, () => sql`insert into probe default values`.execute(other.db)));
      const after = other.writeStats!();
      expect({ commits: after.commits - before.commits, writes: after.writes - before.writes }).toEqual({ commits: 5, writes: 5 });
    } finally {
      await other.close();
    }
  });
});

describeEachDialect('PostgreSQL connection settings', (dialect) => {
  const database = useTestDatabase(dialect);

  it.skipIf(dialect !== 'postgres')('runs every pooled connection without JIT (its compile time dwarfs our short queries)', async () => {
    const handle = openDatabase(database().options(3));
    try {
      const settings = await Promise.all(
        [1, 2, 3].map(() =>
          handle.db.transaction().execute(async (trx) => (await sql<{ jit: string }>`show jit`.execute(trx)).rows[0]!.jit),
        ),
      );
      expect(settings).toEqual(['off', 'off', 'off']);
    } finally {
      await handle.close();
    }
  });
});

describeEachDialect('closing a database handle', (dialect) => {
  const database = useTestDatabase(dialect);

  // Kysely starts its driver on the first query and destroys only a started one.
  it('releases the connection or pool of a handle that never ran a query', async () => {
    const handle = openDatabase(database().options(2));
    await handle.close();
    if (handle.pool) expect(handle.pool.ended).toBe(true);
    else await expect(sql`select 1`.execute(handle.db)).rejects.toThrow();
    await handle.close(); // twice is harmless
  });
});
