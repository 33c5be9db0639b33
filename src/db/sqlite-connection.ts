import BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';
import { BoundedMap } from '../kernel/bounded-map.js';
import { startCheckpointer, WAL_LIMIT_BYTES, type Checkpointer } from './checkpointer.js';

/** `PRAGMA synchronous` in WAL mode: `normal` syncs at checkpoints only, `full` at every commit too. */
export type SqliteSynchronous = 'normal' | 'full';

export interface SqliteOptions {
  /** Writes of one event-loop turn share a commit (GroupCommitSqliteDriver), or each commits alone (PlainSqliteDriver). */
  readonly groupCommit: boolean;
  readonly synchronous: SqliteSynchronous;
}

export const DEFAULT_SQLITE_OPTIONS: SqliteOptions = { groupCommit: true, synchronous: 'normal' };

const SQLITE_CACHE_KIB = 64 * 1024;
/** The longest pause between two tries for the write lock. */
const MAX_BUSY_PAUSE_MS = 20;

/**
 * The one connection to the SQLite file that a driver (group commit or plain) runs on: the
 * pragmas, the statement cache, the wait for a write lock held elsewhere, the background
 * checkpointer, and the close.
 *
 * The connection's busy_timeout is 0 and `whenFree` waits on a timer instead: SQLite's own wait
 * stops the event loop, and with it a group in this process that holds the lock and commits
 * only when the loop turns.
 */
export class SqliteConnection {
  /** A number that changes when another connection has committed to the file since the last call (DatabaseHandle.dataVersion). */
  readonly dataVersion: () => number;
  private readonly sqlite: BetterSqlite3.Database;
  private readonly statements: StatementCache;
  private readonly checkpointer: Checkpointer;

  constructor(
    file: string,
    synchronous: SqliteSynchronous,
    private readonly lockWaitMs: number,
  ) {
    const sqlite = new BetterSqlite3(file);
    this.sqlite = sqlite;
    // WAL lets readers run beside the writer. Switching to WAL needs a moment of exclusive
    // access; a second process opening the file at the same time gets SQLITE_BUSY without any
    // wait, so retry.
    retryBusy(() => sqlite.pragma('journal_mode = WAL'));
    // NORMAL: durable across a process crash, while a power cut may drop the last commits (never
    // corrupt); FULL: an fsync of the WAL at every commit (README, SWITCHBOARD_SQLITE_SYNCHRONOUS).
    sqlite.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    sqlite.pragma('foreign_keys = ON');
    // Pages SQLite keeps itself, up to 64 MiB (the default is 2 MiB): beyond its cache every page
    // a query touches is read from the OS with a syscall, and a lookup among 10,000 agents or a
    // page of 100,000 tasks touches many.
    sqlite.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
    sqlite.pragma('busy_timeout = 0');
    this.statements = new StatementCache(sqlite);
    this.dataVersion = oncePerTurn(sqlite.prepare('PRAGMA data_version').pluck());
    // A backstop only: should writes outrun the worker (a checkpoint never completes while a
    // writer keeps appending), the commit that takes the WAL past half its bound checkpoints,
    // and journal_size_limit cuts the file back when the WAL restarts.
    const pageSize = Number(sqlite.pragma('page_size', { simple: true }));
    sqlite.pragma(`wal_autocheckpoint = ${Math.floor(WAL_LIMIT_BYTES / 2 / pageSize)}`);
    sqlite.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
    this.checkpointer = startCheckpointer(file, () => {
      if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
    });
  }

  /** Whether a transaction is open on the connection (SQLite ends one itself on some errors). */
  get inTransaction(): boolean {
    return this.sqlite.inTransaction;
  }

  statement(sqlText: string): CachedStatement {
    return this.statements.get(sqlText);
  }

  run<R>(query: CompiledQuery, statement = this.statements.get(query.sql)): QueryResult<R> {
    const parameters = query.parameters as unknown[];
    if (statement.reader) return { rows: statement.all(parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  /**
   * Runs `work` at once, or, while another connection holds a lock it needs (SQLITE_BUSY),
   * again on a timer until it succeeds or `lockWaitMs` have passed.
   */
  async whenFree<T>(work: () => T): Promise<T> {
    const deadline = Date.now() + this.lockWaitMs;
    for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, MAX_BUSY_PAUSE_MS)) {
      try {
        return work();
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }

  /**
   * The last connection to close checkpoints what is left and removes the WAL, so the
   * checkpointer's goes first. Closing again does nothing.
   */
  async close(): Promise<void> {
    if (!this.sqlite.open) return;
    try {
      await this.checkpointer.stop();
    } finally {
      this.sqlite.close();
    }
  }
}

export const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');
export const COMMIT = CompiledQuery.raw('commit');
export const ROLLBACK = CompiledQuery.raw('rollback');

/**
 * What both SQLite drivers share. A savepoint is a statement on the lease that holds the
 * transaction, so it follows that driver's rules for statements inside a transaction.
 */
export abstract class SqliteDriver implements Driver {
  /** Kysely's callers take the one connection in turn, in the order they asked. */
  protected readonly mutex = new FifoMutex();
  protected commitCount = 0;
  protected writeCount = 0;

  constructor(protected readonly connection: SqliteConnection) {}

  /** Physical commits, and the writes (logical transactions and lone writes) they carried. */
  get stats(): { commits: number; writes: number } {
    return { commits: this.commitCount, writes: this.writeCount };
  }

  async init(): Promise<void> {}

  abstract acquireConnection(): Promise<DatabaseConnection>;
  abstract beginTransaction(connection: DatabaseConnection): Promise<void>;
  abstract commitTransaction(connection: DatabaseConnection): Promise<void>;
  abstract rollbackTransaction(connection: DatabaseConnection): Promise<void>;
  abstract releaseConnection(connection: DatabaseConnection): Promise<void>;
  abstract destroy(): Promise<void>;

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(this.savepointCommand('savepoint', name));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(this.savepointCommand('rollback to', name));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(this.savepointCommand('release', name));
  }

  protected savepointCommand(command: string, name: string): CompiledQuery {
    return CompiledQuery.raw(`${command} "${name.replaceAll('"', '""')}"`);
  }
}

/** One use of the connection by Kysely: a query, or a transaction from begin to commit. */
export abstract class SqliteLease implements DatabaseConnection {
  abstract executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>>;

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    for (const row of (await this.executeQuery<R>(query)).rows) yield { rows: [row] };
  }
}

/** Hands the connection to waiters in the order they asked. */
class FifoMutex {
  private locked = false;
  private readonly waiters: Array<() => void> = [];

  lock(): Promise<void> {
    if (!this.locked) {
      this.locked = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  unlock(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }
}

/** What the drivers run: better-sqlite3's statement, or its fast-rows wrapper for readers. */
export interface CachedStatement {
  readonly reader: boolean;
  readonly readonly: boolean;
  all(parameters: ReadonlyArray<unknown>): unknown[];
  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint };
}

/**
 * better-sqlite3 compiles SQL on every prepare(). Reusing compiled statements by SQL text
 * removed ~6% of CPU on an authenticated read (profiled). Safe because statements run one at a
 * time on the single connection. A hit does not renew its entry (the oldest goes first, used or
 * not): renewing cost two more map operations on every query, and a hot statement dropped is
 * only prepared once more.
 */
class StatementCache {
  private readonly cache = new BoundedMap<string, CachedStatement>(500);

  constructor(private readonly sqlite: BetterSqlite3.Database) {}

  get(sqlText: string): CachedStatement {
    let statement = this.cache.get(sqlText);
    if (statement === undefined) {
      statement = withFastRows(this.sqlite.prepare(sqlText));
      this.cache.set(sqlText, statement);
    }
    return statement;
  }
}

/**
 * better-sqlite3 builds each row object one property at a time (~0.7 µs a value: half of
 * claiming 2,000 due routines). A reader statement runs in raw mode instead, and its rows
 * become objects through one literal of fixed shape per statement: the same rows, about
 * twice as fast (measured). Column names reach the generated code only as JSON strings.
 */
function withFastRows(statement: BetterSqlite3.Statement): CachedStatement {
  if (!statement.reader) return statement as unknown as CachedStatement;
  const names = statement.columns().map((column) => column.name);
  const fields = names.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(', ');
  const toRow = new Function('v', `return { ${fields} };`) as (values: unknown[]) => unknown;
  statement.raw(true);
  return {
    reader: true,
    readonly: statement.readonly,
    all(parameters) {
      const rows = statement.all(parameters) as unknown[][];
      const objects = new Array<unknown>(rows.length);
      for (let i = 0; i < rows.length; i++) objects[i] = toRow(rows[i]!);
      return objects;
    },
    run: (parameters) => statement.run(parameters),
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
