import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { databaseOptions, openDatabase, sqliteFile } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { LOCAL_POSTGRES_URL, postgresTestUrl } from './database.js';

/** Before the suite: migrated template databases for both backends, removed after the suite. */
export default async function setup(): Promise<() => Promise<void>> {
  const dropSqliteTemplate = await sqliteTemplate();
  const dropPostgresTemplate = await postgresTemplate();
  return async () => {
    await dropPostgresTemplate?.();
    dropSqliteTemplate();
  };
}

/**
 * One migrated SQLite database file that the test servers' data dirs start with a copy of
 * (copying takes a millisecond, migrating a new one about a quarter of a second of CPU).
 */
async function sqliteTemplate(): Promise<() => void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-sqlite-template-'));
  const handle = openDatabase(databaseOptions(loadConfig({ SWITCHBOARD_DATA_DIR: dataDir })));
  try {
    await migrateToLatest(handle);
  } finally {
    // Closing checkpoints the WAL into the file: the file alone is the migrated database.
    await handle.close();
  }
  process.env.SWITCHBOARD_TEST_SQLITE_TEMPLATE = sqliteFile(dataDir);
  return () => fs.rmSync(dataDir, { recursive: true, force: true });
}

/**
 * Before the suite: one migrated PostgreSQL database that the test servers' databases are copied
 * from (`CREATE DATABASE … TEMPLATE`, about a second less each than migrating a new one, and the
 * suite makes well over a hundred). Dropped after the suite.
 */
async function postgresTemplate(): Promise<(() => Promise<void>) | undefined> {
  const baseUrl = await choosePostgres();
  if (!baseUrl) return undefined;
  const name = `sbtest_template_${process.pid}`;
  await adminQuery(baseUrl, `CREATE DATABASE ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-template-'));
  const handle = openDatabase(databaseOptions(loadConfig({ DATABASE_URL: url.toString(), SWITCHBOARD_DATA_DIR: dataDir })));
  try {
    await migrateToLatest(handle);
  } finally {
    await handle.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  // The test processes are started after this: they inherit it.
  process.env.SWITCHBOARD_TEST_PG_TEMPLATE = name;
  return () => adminQuery(baseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

async function adminQuery(baseUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * The PostgreSQL of the PostgreSQL runs: SWITCHBOARD_TEST_DATABASE_URL, else the local one when
 * it answers (the test processes inherit the choice). Without one, a single loud line says how
 * many suites skip their PostgreSQL run and why, instead of hundreds of silent skips.
 */
async function choosePostgres(): Promise<string | undefined> {
  const configured = process.env.SWITCHBOARD_TEST_DATABASE_URL;
  if (configured !== undefined) {
    if (postgresTestUrl()) return postgresTestUrl();
    warnSkipped('SWITCHBOARD_TEST_DATABASE_URL is empty');
    return undefined;
  }
  const client = new pg.Client({ connectionString: LOCAL_POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    process.env.SWITCHBOARD_TEST_DATABASE_URL = LOCAL_POSTGRES_URL;
    return LOCAL_POSTGRES_URL;
  } catch (err) {
    warnSkipped(`SWITCHBOARD_TEST_DATABASE_URL is unset and ${LOCAL_POSTGRES_URL} does not answer (${(err as Error).message})`);
    return undefined;
  } finally {
    await client.end().catch(() => {});
  }
}

function warnSkipped(why: string): void {
  if (process.env.CI) throw new Error(`CI is set but ${why}: the PostgreSQL runs would be skipped`);
  const testDir = path.resolve(import.meta.dirname, '..');
  const suites = fs
    .readdirSync(testDir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts') && fs.readFileSync(path.join(testDir, file), 'utf8').includes('describeEachDialect('));
  console.warn(
    `\n*** PostgreSQL SKIPPED: ${suites.length} test files run on SQLite only, because ${why}. ` +
      'Set SWITCHBOARD_TEST_DATABASE_URL=postgres://USER@HOST:PORT/DB (a database the user may CREATE DATABASE from) to include them. ***\n',
  );
}
