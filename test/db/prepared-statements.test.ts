import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
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
  async function preparedAfterAQuery(prepare: boolean): Promise<string[]> {
    database = await createTestDatabase('postgres');
    handle = openDatabase({ ...database.options(1), prepare });
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
});
