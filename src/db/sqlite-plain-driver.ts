import type { CompiledQuery, DatabaseConnection, QueryResult } from 'kysely';
import { BEGIN_IMMEDIATE, COMMIT, ROLLBACK, SqliteDriver, SqliteLease } from './sqlite-connection.js';

/**
 * Kysely's driver for the one SQLite connection without group commit
 * (SWITCHBOARD_SQLITE_GROUP_COMMIT=off): one transaction at a time, each committed on its own,
 * and a write outside a transaction commits by itself. Kysely's callers queue for the
 * connection in the order they asked and hold it from a transaction's BEGIN to its end, so a
 * request waits for every transaction ahead of it, each with its own COMMIT (and, with
 * `synchronous=full`, its own fsync). GroupCommitSqliteDriver is the default.
 *
 * Transactions begin IMMEDIATE, like the groups of the other driver: a second writer of the file
 * makes them wait for the write lock (on a timer, SqliteConnection.whenFree) instead of failing
 * on a stale snapshot.
 */
export class PlainSqliteDriver extends SqliteDriver {
  async acquireConnection(): Promise<DatabaseConnection> {
    await this.mutex.lock();
    return new PlainLease(this);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await this.connection.whenFree(() => this.connection.run(BEGIN_IMMEDIATE));
    (connection as PlainLease).inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    this.transactionOpen();
    (connection as PlainLease).inTransaction = false;
    this.connection.run(COMMIT);
    this.commitCount++;
    this.writeCount++;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as PlainLease).inTransaction = false;
    // SQLite may have rolled it back already (ON CONFLICT ROLLBACK, a full disk).
    if (this.connection.inTransaction) this.connection.run(ROLLBACK);
  }

  async releaseConnection(): Promise<void> {
    this.mutex.unlock();
  }

  async destroy(): Promise<void> {
    await this.mutex.lock();
    try {
      await this.connection.close();
    } finally {
      this.mutex.unlock();
    }
  }

  /** @internal the body of `PlainLease.executeQuery`. */
  async execute<R>(lease: PlainLease, query: CompiledQuery): Promise<QueryResult<R>> {
    if (lease.inTransaction) {
      this.transactionOpen();
      return this.connection.run(query);
    }
    const statement = this.connection.statement(query.sql);
    const result = await this.connection.whenFree(() => this.connection.run<R>(query, statement));
    if (!statement.readonly) {
      this.commitCount++;
      this.writeCount++;
    }
    return result;
  }

  /** A transaction SQLite abandoned stays failed until its rollback: what it runs next must not be written on its own. */
  private transactionOpen(): void {
    if (!this.connection.inTransaction) {
      throw new Error('the transaction was rolled back by SQLite (a statement failed with ON CONFLICT ROLLBACK, or the disk is full)');
    }
  }
}

class PlainLease extends SqliteLease {
  /** Between this lease's BEGIN and its COMMIT or ROLLBACK. */
  inTransaction = false;

  constructor(private readonly driver: PlainSqliteDriver) {
    super();
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.driver.execute<R>(this, query);
  }
}
