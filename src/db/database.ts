import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  SqliteQueryCompiler,
  sql,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type LimitNode,
  type QueryCompiler,
  type SqliteDatabase,
  type SqliteDialectConfig,
  type SqliteStatement,
} from 'kysely';
import pg from 'pg';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { DialectCapabilities } from './capabilities.js';
import { startCheckpointer } from './checkpointer.js';
import { postgresCapabilities, sqliteCapabilities } from './capabilities.js';
import type { Database } from './schema.js';

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
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | null;
  dataDir: string;
  poolSize?: number;
}

export function openDatabase(options: DatabaseOptions): DatabaseHandle {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 10) : openSqlite(options.dataDir);
}

function openSqlite(dataDir: string): DatabaseHandle {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'switchboard.db');
  const sqlite = new BetterSqlite3(file);
  // WAL lets readers run beside the writer; NORMAL sync is durable across process crashes
  // (a power loss may drop the last transactions, never corrupt). busy_timeout covers a second
  // process (the CLI) writing while the server runs.
  sqlite.pragma('busy_timeout = 5000');
  // Switching to WAL needs a moment of exclusive access; a second process opening the file
  // at the same time gets SQLITE_BUSY without any wait, so retry.
  retryBusy(() => sqlite.pragma('journal_mode = WAL'));
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // Pages SQLite keeps itself, up to 64 MiB (the default is 2 MiB): beyond its cache every page
  // a query touches is read from the OS with a syscall, and a lookup among 10,000 agents or a
  // page of 100,000 tasks touches many.
  sqlite.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
  const db = new Kysely<Database>({ dialect: new SwitchboardSqliteDialect({ database: withStatementCache(sqlite) }) });
  sqlite.pragma('wal_autocheckpoint = 0');
  const checkpointer = startCheckpointer(file, () => {
    if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
  });
  return {
    db,
    caps: sqliteCapabilities,
    pool: null,
    url: null,
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
 * Two processes may write one SQLite file (a server and `switchboard migrate` or `keys`).
 * A deferred transaction that reads and then writes fails at once with SQLITE_BUSY when the
 * other process wrote in between (the busy timeout cannot help a stale snapshot), so every
 * transaction begins IMMEDIATE: it takes the write lock up front, waiting up to busy_timeout.
 * With transactional DDL declared, Kysely's migrator runs inside such a transaction, which
 * makes it the migration lock: a second process waits, then finds nothing left to apply.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class SwitchboardSqliteDialect extends SqliteDialect {
  constructor(private readonly config: SqliteDialectConfig) {
    super(config);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.config);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  override createQueryCompiler(): QueryCompiler {
    return new UnplannedLimitSqliteCompiler();
  }
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

/**
 * better-sqlite3 compiles SQL on every prepare(); Kysely prepares per query. Reusing compiled
 * statements by SQL text removed ~6% of CPU on an authenticated read (profiled). Safe because
 * Kysely runs one query at a time on its single SQLite connection. A hit does not renew its
 * entry (the oldest goes first, used or not): renewing cost two more map operations on every
 * query, and a hot statement dropped is only prepared once more.
 */
function withStatementCache(sqlite: BetterSqlite3.Database, capacity = 500): SqliteDatabase {
  const cache = new BoundedMap<string, SqliteStatement>(capacity);
  return {
    close: () => sqlite.close(),
    prepare(sqlText: string) {
      let statement = cache.get(sqlText);
      if (statement === undefined) {
        statement = withFastRows(sqlite.prepare(sqlText));
        cache.set(sqlText, statement);
      }
      return statement;
    },
  };
}

/**
 * better-sqlite3 builds each row object one property at a time (~0.7 µs a value: half of
 * claiming 2,000 due routines). A reader statement runs in raw mode instead, and its rows
 * become objects through one literal of fixed shape per statement: the same rows, about
 * twice as fast (measured). Column names reach the generated code only as JSON strings.
 */
function withFastRows(statement: BetterSqlite3.Statement): SqliteStatement {
  if (!statement.reader) return statement;
  const names = statement.columns().map((column) => column.name);
  const fields = names.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(', ');
  const toRow = new Function('v', `return { ${fields} };`) as (values: unknown[]) => unknown;
  statement.raw(true);
  return {
    reader: true,
    all(parameters) {
      const rows = statement.all(parameters) as unknown[][];
      const objects = new Array<unknown>(rows.length);
      for (let i = 0; i < rows.length; i++) objects[i] = toRow(rows[i]!);
      return objects;
    },
    run: (parameters) => statement.run(parameters),
    *iterate(parameters) {
      for (const values of statement.iterate(parameters) as IterableIterator<unknown[]>) yield toRow(values);
    },
  };
}

function openPostgres(url: string, poolSize: number): DatabaseHandle {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    caps: postgresCapabilities,
    pool,
    url,
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    close: async () => {
      await db.destroy();
    },
  };
}
