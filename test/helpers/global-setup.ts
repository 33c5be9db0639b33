import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { databaseOptions, openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { postgresTestUrl } from './database.js';

/**
 * Before the suite: one migrated PostgreSQL database that the test servers' databases are copied
 * from (`CREATE DATABASE … TEMPLATE`, about a second less each than migrating a new one, and the
 * suite makes well over a hundred). Dropped after the suite.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const baseUrl = postgresTestUrl();
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
