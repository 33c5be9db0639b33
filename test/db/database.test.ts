import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

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
    const pragma = async (name: string) => Object.values((await sql.raw<Record<string, unknown>>(`pragma ${name}`).execute(handle.db)).rows[0]!)[0];
    expect(await pragma('journal_mode')).toBe('wal');
    expect(await pragma('synchronous')).toBe(1); // NORMAL
    expect(await pragma('foreign_keys')).toBe(1);
    expect(await pragma('cache_size')).toBe(-64 * 1024); // KiB
  });
});
