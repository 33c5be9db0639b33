import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, sql, type Dialect, type LimitNode } from 'kysely';
import pg from 'pg';
import type { DialectCapabilities } from './capabilities.js';
import { startCheckpointer } from './checkpointer.js';
import { postgresCapabilities, sqliteCapabilities } from './capabilities.js';
import type { Database } from './schema.js';
import { GroupCommitSqliteDriver } from './sqlite-driver.js';

// int8 (counts, epoch-ms timestamps) arrives as number, not string; every value we store fits
// in 2^53. float8/numeric likewise.
pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10));
pg.types.setTypeParser(1700, (v) => Number.parseFloat(v));

export type Db = Kysely<Database>;

const SQLITE_CACHE_KIB = 64 * 1024;

export interface DatabaseHandle {
  readonly db: Db;
  readonly caps: DialectCapabilities;
  /** The pg pool in cluster mode (the notifier publishes through it). */
  readonly pool: pg.Pool | null;
  readonly url: string | null;
  /** SQLite only: physical commits and the writes they carried (GroupCommitSqliteDriver). */
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
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 10) : openSqlite(options.dataDir);
}

function openSqlite(dataDir: string): DatabaseHandle {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = sqliteFile(dataDir);
  const sqlite = new BetterSqlite3(file);
  // WAL lets readers run beside the writer; NORMAL sync is durable across process crashes
  // (a power loss may drop the last transactions, never corrupt). Switching to WAL needs a
  // moment of exclusive access; a second process opening the file at the same time gets
  // SQLITE_BUSY without any wait, so retry.
  retryBusy(() => sqlite.pragma('journal_mode = WAL'));
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // Pages SQLite keeps itself, up to 64 MiB (the default is 2 MiB): beyond its cache every page
  // a query touches is read from the OS with a syscall, and a lookup among 10,000 agents or a
  // page of 100,000 tasks touches many.
  sqlite.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
  // A second process (the CLI) writing while the server runs makes the other wait up to 5 s.
  const driver = new GroupCommitSqliteDriver(sqlite, 5000);
  const db = new Kysely<Database>({ dialect: sqliteDialect(driver) });
  sqlite.pragma('wal_autocheckpoint = 0');
  const dataVersion = oncePerTurn(sqlite.prepare('PRAGMA data_version').pluck());
  const checkpointer = startCheckpointer(file, () => {
    if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
  });
  return {
    db,
    caps: sqliteCapabilities,
    pool: null,
    url: null,
    writeStats: () => driver.stats,
    dataVersion,
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    close: async () => {
      await checkpointer.stop();
      // The last connection to close checkpoints what is left and removes the WAL.
      await db.destroy();
    },
  };
}

/**
 * Reads the statement at most once per turn of the event loop. Each read starts a read
 * transaction (3–15 µs, measured on a loaded machine); under load many requests share a turn.
 * A caller later in the same turn learns nothing new from reading again: whatever it is
 * handling was received before the turn's first read.
 */
function oncePerTurn(statement: BetterSqlite3.Statement): () => number {
  let value: number | null = null;
  const forget = () => {
    value = null;
  };
  return () => {
    if (value === null) {
      value = statement.get() as number;
      setImmediate(forget);
    }
    return value;
  };
}

/**
 * With transactional DDL declared, Kysely's migrator runs inside a transaction, which begins
 * IMMEDIATE (GroupCommitSqliteDriver) and so is the migration lock: a second process waits,
 * then finds nothing left to apply.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

function sqliteDialect(driver: GroupCommitSqliteDriver): Dialect {
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

/** Retries a statement that SQLite refuses with SQLITE_BUSY without calling its busy handler. */
function retryBusy<T>(work: () => T, timeoutMs = 5000): T {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return work();
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

function openPostgres(url: string, poolSize: number): DatabaseHandle {
  // A connection that cannot be made in 5 s fails the request (503) instead of holding it.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 5000 });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Nor one in use: it emits 'error' besides failing its query (a 503, see faults.ts), and the
  // pool listens only to idle clients. The pool drops the broken client when it is released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
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
    },
  };
}
