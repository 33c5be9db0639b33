import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { WAL_LIMIT_BYTES } from '../../src/db/checkpointer.js';
import * as fromSrc from '../../src/db/database.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { waitFor } from '../helpers/wait.js';

describe('SQLite checkpoints in the background', () => {
  let database: TestDatabase;
  let handle: DatabaseHandle | undefined;
  afterEach(async () => {
    await handle?.close();
    await database.drop();
  });

  // The worker is a file beside checkpointer.ts: src/ under the tests, dist/ once built (`npm test` builds first).
  it.each([
    ['src/', async () => fromSrc],
    ['dist/', async () => (await import(pathToFileURL(path.resolve('dist/db/database.js')).href)) as typeof fromSrc],
  ])('copies the WAL into the database file from a worker, never in a commit (from %s)', async (_, load) => {
    database = await createTestDatabase('sqlite');
    handle = (await load()).openDatabase({ databaseUrl: null, dataDir: database.dataDir });
    const file = path.join(database.dataDir, 'switchboard.db');
    const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(handle.db);
    // Only a backstop in the commit: at half the WAL's bound (pages of 4 KiB).
    expect(rows[0]!.wal_autocheckpoint).toBe(WAL_LIMIT_BYTES / 2 / 4096);
    await sql`create table probe (id integer primary key, body text)`.execute(handle.db);
    const sizeBefore = fs.statSync(file).size;
    // About 2 MB: well under the 1,000 pages at which a commit would checkpoint by default.
    for (let i = 0; i < 20; i++) await sql`insert into probe (body) values (${'x'.repeat(100_000)})`.execute(handle.db);
    await waitFor(async () => fs.statSync(file).size > sizeBefore + 1_500_000, 5000, 20);
    const { rows: count } = await sql<{ n: number }>`select count(*) as n from probe`.execute(handle.db);
    expect(Number(count[0]!.n)).toBe(20);
  });

  it('removes the WAL when the database closes', async () => {
    database = await createTestDatabase('sqlite');
    handle = openDatabase({ databaseUrl: null, dataDir: database.dataDir });
    await sql`create table probe (id integer primary key)`.execute(handle.db);
    await handle.close();
    handle = undefined;
    expect(fs.existsSync(path.join(database.dataDir, 'switchboard.db-wal'))).toBe(false);
  });

  it('keeps the WAL bounded and truncates it once no reader holds it back', async () => {
    database = await createTestDatabase('sqlite');
    handle = openDatabase({ databaseUrl: null, dataDir: database.dataDir });
    const file = path.join(database.dataDir, 'switchboard.db');
    const walSize = () => fs.statSync(`${file}-wal`).size;
    const { rows } = await sql<{ journal_size_limit: number }>`pragma journal_size_limit`.execute(handle.db);
    expect(Number(rows[0]!.journal_size_limit)).toBe(WAL_LIMIT_BYTES);
    await sql`create table probe (id integer primary key, body text)`.execute(handle.db);
    // A reader in another connection holds its snapshot: no checkpoint may pass it, the WAL grows.
    const reader = new BetterSqlite3(file, { readonly: true });
    reader.exec('begin');
    reader.prepare('select count(*) from probe').get();
    for (let i = 0; i < 24; i++) await sql`insert into probe (body) values (${'x'.repeat(1_000_000)})`.execute(handle.db);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(walSize()).toBeGreaterThan(WAL_LIMIT_BYTES / 4);
    reader.exec('commit');
    reader.close();
    await waitFor(async () => walSize() === 0, 5000, 20);
    // Sustained writes with no reader in the way: the WAL stays near its bound instead of growing with
    // what was written (152 MB for these 150 MB without the commit-time backstop). A checkpoint that a
    // busy machine delays lets it pass the bound for a while, never by much, and it comes back under.
    let largest = 0;
    for (let i = 0; i < 150; i++) {
      await sql`insert into probe (body) values (${'y'.repeat(1_000_000)})`.execute(handle.db);
      largest = Math.max(largest, walSize());
    }
    expect(largest).toBeLessThan(1.5 * WAL_LIMIT_BYTES);
    await waitFor(async () => walSize() <= WAL_LIMIT_BYTES, 5000, 20);
  });
});
