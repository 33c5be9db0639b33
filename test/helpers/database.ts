import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { databaseOptions, sqliteFile, type DatabaseOptions } from '../../src/db/database.js';

/** 'sqlite-no-group-commit' is SQLite with SWITCHBOARD_SQLITE_GROUP_COMMIT=off (db/sqlite-plain-driver.ts). */
export type Dialect = 'sqlite' | 'sqlite-no-group-commit' | 'postgres';
export const DIALECTS: Dialect[] = ['sqlite', 'postgres'];

/** One isolated database: a temp data dir, plus a fresh PostgreSQL database for 'postgres'. */
export interface TestDatabase {
  readonly dialect: Dialect;
  readonly databaseUrl: string | null;
  readonly dataDir: string;
  /** The configuration entries besides SWITCHBOARD_DATA_DIR that select this database: for a server's or the CLI's environment. */
  readonly env: Record<string, string>;
  /** What `openDatabase` takes to open this database, as a server on `env` would. */
  options(poolSize?: number): DatabaseOptions;
  drop(): Promise<void>;
}

/** The PostgreSQL the suites use when SWITCHBOARD_TEST_DATABASE_URL is unset and it answers (test/helpers/global-setup.ts). */
export const LOCAL_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

export function postgresTestUrl(): string | undefined {
  const url = process.env.SWITCHBOARD_TEST_DATABASE_URL;
  return url && url.trim() !== '' ? url.trim() : undefined;
}

/**
 * A new database. `migrated`: a copy of the suite's migrated template (see global-setup.ts)
 * instead of an empty one, for servers, which would migrate it at start anyway.
 */
export async function createTestDatabase(dialect: Dialect, { migrated = false } = {}): Promise<TestDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-test-'));
  if (dialect !== 'postgres') {
    const template = migrated ? process.env.SWITCHBOARD_TEST_SQLITE_TEMPLATE : undefined;
    if (template) fs.copyFileSync(template, sqliteFile(dataDir));
    const env: Record<string, string> = dialect === 'sqlite-no-group-commit' ? { SWITCHBOARD_SQLITE_GROUP_COMMIT: 'off' } : {};
    return testDatabase(dialect, dataDir, env, async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  }
  const baseUrl = postgresTestUrl();
  if (!baseUrl) throw new Error('SWITCHBOARD_TEST_DATABASE_URL is not set');
  const name = `sbtest_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    const template = migrated ? process.env.SWITCHBOARD_TEST_PG_TEMPLATE : undefined;
    await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return testDatabase(dialect, dataDir, { DATABASE_URL: url.toString() }, async () => {
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await client.end();
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
}

function testDatabase(dialect: Dialect, dataDir: string, env: Record<string, string>, drop: () => Promise<void>): TestDatabase {
  return {
    dialect,
    databaseUrl: env.DATABASE_URL ?? null,
    dataDir,
    env,
    // A method, not a closure: a copy with another data dir (`{ ...database, dataDir }`) opens that one.
    options(poolSize) {
      return databaseOptions(loadConfig({ ...this.env, SWITCHBOARD_DATA_DIR: this.dataDir }), poolSize);
    },
    drop,
  };
}

/**
 * One database for a whole suite (a server restarted on it keeps its data), dropped after the
 * suite. Read it through the getter inside tests: it exists once `beforeAll` has run.
 */
export function useTestDatabase(dialect: Dialect): () => TestDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database?.drop();
  });
  return () => database!;
}
