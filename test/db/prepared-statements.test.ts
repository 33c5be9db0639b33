import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { databaseOptions, openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, postgresTestUrl, type TestDatabase } from '../helpers/database.js';

// PostgreSQL only: SQLite statements are prepared by better-sqlite3 anyway.
describe.runIf(postgresTestUrl() !== undefined || process.env.CI)('prepared statements on PostgreSQL', () => {
  let database: TestDatabase | undefined;
  let handle: DatabaseHandle | undefined;
  afterEach(async () => {
    await handle?.close();
    await database?.drop();
  });

  /** The statements the one connection of a pool of one has prepared, after a parameterized query. */
  async function preparedAfterAQuery(prepare: boolean | Record<string, string>): Promise<string[]> {
    database = await createTestDatabase('postgres');
    // A setting, or the environment a server would read it from.
    const options =
      typeof prepare === 'boolean' ? { ...database.options(1), prepare } : databaseOptions(loadConfig({ ...database.env, ...prepare }), 1);
    handle = openDatabase(options);
    await sql`select ${1}::int as one`.execute(handle.db);
    await sql`select ${2}::int as two`.execute(handle.db);
    const rows = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(handle.db);
    return rows.rows.map((row) => row.statement);
  }

  it('keeps parameterized statements prepared on the connection', async () => {
    expect(await preparedAfterAQuery(true)).toEqual(expect.arrayContaining(['select $1::int as one', 'select $1::int as two']));
  });

  it('prepares nothing when turned off (SWITCHBOARD_PG_PREPARE=off, for PgBouncer in transaction mode)', async () => {
    expect(await preparedAfterAQuery(false)).toEqual([]);
  });

  it('follows SWITCHBOARD_PG_PREPARE, and SWITCHBOARD_PG_LISTEN when it is not set', async () => {
    expect(await preparedAfterAQuery({ SWITCHBOARD_PG_LISTEN: 'off', SWITCHBOARD_PG_PREPARE: 'on' })).toContain('select $1::int as one');
    await handle!.close();
    await database!.drop();
    expect(await preparedAfterAQuery({ SWITCHBOARD_PG_LISTEN: 'off' })).toEqual([]);
  });
});
