import fs from 'node:fs';
import path from 'node:path';
import {
  Kysely,
  PostgresDialect,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  sql,
  type Dialect,
  type LimitNode,
  type PostgresPool,
  type PostgresPoolClient,
} from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import type { DialectCapabilities } from './capabilities.js';
import { postgresCapabilities, sqliteCapabilities } from './capabilities.js';
import type { Database } from './schema.js';
import { DEFAULT_SQLITE_OPTIONS, SqliteConnection, type SqliteDriver, type SqliteOptions } from './sqlite-connection.js';
import { GroupCommitSqliteDriver } from './sqlite-driver.js';
import { PlainSqliteDriver } from './sqlite-plain-driver.js';

// int8 (counts, epoch-ms timestamps) arrives as number, not string; every value we store fits
// in 2^53. float8/numeric likewise.
pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10));
pg.types.setTypeParser(1700, (v) => Number.parseFloat(v));

export type Db = Kysely<Database>;

/** How long a write waits for the write lock another connection (the CLI, another process) holds. */
const SQLITE_LOCK_WAIT_MS = 5000;

export interface DatabaseHandle {
  readonly db: Db;
  readonly caps: DialectCapabilities;
  /** The pg pool in cluster mode (the notifier publishes through it). */
  readonly pool: pg.Pool | null;
  readonly url: string | null;
  /** SQLite only: physical commits and the writes they carried (equal without group commit). */
  readonly writeStats: (() => { commits: number; writes: number }) | null;
  /**
   * SQLite only: a number that changes when another connection (another process: the CLI)
   * has committed to the file since the last call; this process's own writes leave it alone.
   */
  readonly dataVersion: (() => number) | null;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | null;
  dataDir: string;
  poolSize?: number;
  /** SQLite only; DEFAULT_SQLITE_OPTIONS when absent. */
  sqlite?: SqliteOptions;
  /**
   * PostgreSQL only: keep hot statements parsed and planned per connection (named prepared
   * statements, SWITCHBOARD_PG_PREPARE). Off behind a PgBouncer in transaction mode that does
   * not track prepared statements, which may run a statement on a connection that never
   * prepared it.
   */
  prepare?: boolean;
}

/** The database a configuration selects (the server's and the CLI's). */
export function databaseOptions(config: Config, poolSize?: number): DatabaseOptions {
  return {
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize,
    sqlite: { groupCommit: config.sqliteGroupCommit, synchronous: config.sqliteSynchronous },
    prepare: config.pgPrepare,
  };
}

/** The SQLite file of a data dir. */
export function sqliteFile(dataDir: string): string {
  return path.resolve(dataDir, 'switchboard.db');
}

/** Which database the options select, for people: the SQLite file, or the URL without its password. */
export function describeDatabase(options: DatabaseOptions): string {
  if (!options.databaseUrl) return `SQLite ${sqliteFile(options.dataDir)}`;
  let url: URL;
  try {
    url = new URL(options.databaseUrl);
  } catch {
    return 'PostgreSQL (DATABASE_URL is not a URL)';
  }
  if (url.password) url.password = '***';
  if (url.searchParams.has('password')) url.searchParams.set('password', '***');
  return `PostgreSQL ${url.toString()}`;
}

export function openDatabase(options: DatabaseOptions): DatabaseHandle {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.poolSize ?? 10, options.prepare ?? false)
    : openSqlite(options.dataDir, options.sqlite ?? DEFAULT_SQLITE_OPTIONS);
}

function openSqlite(dataDir: string, options: SqliteOptions): DatabaseHandle {
  fs.mkdirSync(dataDir, { recursive: true });
  const connection = new SqliteConnection(sqliteFile(dataDir), options.synchronous, SQLITE_LOCK_WAIT_MS);
  const driver = options.groupCommit ? new GroupCommitSqliteDriver(connection) : new PlainSqliteDriver(connection);
  const db = new Kysely<Database>({ dialect: sqliteDialect(driver) });
  return {
    db,
    caps: sqliteCapabilities,
    pool: null,
    url: null,
    writeStats: () => driver.stats,
    dataVersion: connection.dataVersion,
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    // The driver commits a group still open, then closes the connection. Kysely starts its
    // driver on the first query, and destroys only a started one: close the connection too.
    close: async () => {
      await db.destroy();
      await connection.close();
    },
  };
}

/**
 * With transactional DDL declared, Kysely's migrator runs inside a transaction, which begins
 * IMMEDIATE (both SQLite drivers) and so is the migration lock: a second process waits,
 * then finds nothing left to apply.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

function sqliteDialect(driver: SqliteDriver): Dialect {
  return {
    createDriver: () => driver,
    createAdapter: () => new TransactionalDdlSqliteAdapter(),
    createQueryCompiler: () => new UnplannedLimitSqliteCompiler(),
    createIntrospector: (db) => new SqliteIntrospector(db),
  };
}

/**
 * SQLite built with STAT4 (better-sqlite3's build) lets the planner read a bound `LIMIT ?`
 * value, so every new binding expires the statement and it is prepared again on each run:
 * 30 against 10 µs for a one-row page (measured). `LIMIT +?` is the same value as an
 * expression the planner does not look into, so a prepared statement stays prepared.
 */
class UnplannedLimitSqliteCompiler extends SqliteQueryCompiler {
  protected override visitLimit(node: LimitNode): void {
    this.append('limit +');
    this.visitNode(node.limit);
  }
}

/** Statement texts prepared per connection at most, the first ones seen (hot ones come first). */
const MAX_PREPARED = 200;

/**
 * The pool Kysely runs on, whose clients run each parameterized statement under a name (pg's
 * per-query `name` option): pg then parses and plans it once per connection, where PostgreSQL
 * did it again on every run, about half its CPU per message on the messaging paths (measured).
 * Names are per text and shared by the pool's connections; past MAX_PREPARED texts (IN lists
 * of every length) statements run unnamed, so a connection's plans stay bounded. The pool
 * itself (the notifier's, the tests') runs its statements unnamed.
 */
function preparingPool(pool: pg.Pool): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_PREPARED) names.set(text, (name = `sb${names.size}`));
    return name;
  };
  // One per pg client, for as long as the client lives: Kysely keeps its connection per client object.
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const preparing = (client: pg.PoolClient): PostgresPoolClient => ({
    // Only Kysely's `query(text, values)`: it passes a cursor only when its dialect has one.
    query: ((text: string, values: unknown[]) =>
      client.query({ text, values, name: values.length === 0 ? undefined : nameOf(text) })) as unknown as PostgresPoolClient['query'],
    release: () => client.release(),
  });
  return {
    connect: async () => {
      const client = await pool.connect();
      let named = clients.get(client);
      if (!named) clients.set(client, (named = preparing(client)));
      return named;
    },
    end: () => pool.end(),
  };
}

function openPostgres(url: string, poolSize: number, prepare: boolean): DatabaseHandle {
  // A connection that cannot be made in 5 s fails the request (503) instead of holding it.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 5000 });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Nor one in use: it emits 'error' besides failing its query (a 503, see faults.ts), and the
  // pool listens only to idle clients. The pool drops the broken client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    // No JIT: compiling a plan costs 15–60 ms, and the planner asks for it whenever a short query
    // over a big table looks costly (a list's bounded count over a million messages: 2 ms run,
    // 16–64 ms with JIT). Queued ahead of the client's first query; a SET (not a startup option)
    // so a PgBouncer that refuses unknown startup parameters still connects.
    client.query('SET jit = off').catch(() => undefined);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: prepare ? preparingPool(pool) : pool }) });
  return {
    db,
    caps: postgresCapabilities,
    pool,
    url,
    writeStats: null,
    dataVersion: null,
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    close: async () => {
      await db.destroy();
      // Kysely ends the pool only if a query went through it; the notifier and tests use it directly.
      if (!pool.ended) await pool.end();
    },
  };
}
