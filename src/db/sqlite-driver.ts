import { CompiledQuery, type DatabaseConnection, type QueryResult } from 'kysely';
import { BEGIN_IMMEDIATE, COMMIT, ROLLBACK, SqliteDriver, SqliteLease, type CachedStatement } from './sqlite-connection.js';

/**
 * Kysely's driver for the one SQLite connection, with group commit: the writes that arrive in
 * one turn of the event loop share one physical transaction, committed when the turn ends.
 *
 * Why: under load a write's COMMIT was its largest cost. SQLite appends every page a
 * transaction touched to the WAL, and a 4 KiB artifact create touches seven B-trees: ~108 µs of
 * its ~310 µs went to the COMMIT alone (measured). Writes that share a commit share those pages.
 *
 * The rules that keep each caller's view the same as with one transaction per write:
 * - a logical transaction (`db.transaction()`) is a savepoint in the group; its rollback undoes
 *   only its own work, and its commit resolves after the group's COMMIT;
 * - a write outside a transaction joins the group (opening one if none is open) and resolves
 *   after the group's COMMIT, or rejects alone if the statement fails;
 * - a read outside a transaction runs at once when no group is open; while one is open it sees
 *   the group's writes, so it too answers only after the COMMIT;
 * - when the group's COMMIT fails, or a statement makes SQLite abandon the whole transaction,
 *   every write of the group rejects with that error (the shared fate, docs/architecture.md
 *   "Group commit"); a read that saw it is run again on what is committed (once);
 * - savepoints (Kysely's `trx.savepoint()`) nest inside the transaction's own savepoint.
 * An idle server commits each write on its own one turn later (a setImmediate), so the cost in
 * latency is at most the rest of the turn the write arrived in.
 *
 * Every group begins IMMEDIATE, so a second writer of the file (the CLI, another process, or
 * a second server in this process) makes it wait for the write lock instead of failing on a
 * stale snapshot; the connection waits for it on a timer (SqliteConnection.whenFree).
 * SWITCHBOARD_SQLITE_GROUP_COMMIT=off uses PlainSqliteDriver instead.
 */
export class GroupCommitSqliteDriver extends SqliteDriver {
  private group: WriteGroup | null = null;

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.mutex.lock();
    return new Lease(this);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    await this.hold(lease);
    lease.group = this.group ?? (await this.openGroup());
    this.connection.run(SAVEPOINT);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    const group = this.transactionGroup(lease);
    lease.group = null;
    this.connection.run(RELEASE);
    this.writeCount++;
    await this.answerAfterCommit(lease, group);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    const group = lease.group;
    lease.group = null;
    // Nothing to undo when the whole group is gone already (its writers were told why).
    if (group === null || group !== this.group || !this.connection.inTransaction) return;
    this.connection.run(ROLLBACK_TO);
    this.connection.run(RELEASE);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    if (!lease.held) return;
    lease.held = false;
    this.mutex.unlock();
  }

  async destroy(): Promise<void> {
    // A group still open is committed first: its writers are waiting for that answer.
    await this.mutex.lock();
    try {
      if (this.group) this.commit(this.group);
    } finally {
      await this.connection.close();
      this.mutex.unlock();
    }
  }

  /** @internal the body of `Lease.executeQuery`. */
  async execute<R>(lease: Lease, query: CompiledQuery): Promise<QueryResult<R>> {
    await this.hold(lease);
    if (lease.group !== null) {
      this.transactionGroup(lease);
      return this.runInGroup(query);
    }
    const statement = this.connection.statement(query.sql);
    if (this.group === null && statement.readonly) return this.connection.whenFree(() => this.connection.run<R>(query, statement));
    const group = this.group ?? (await this.openGroup());
    const result = this.runInGroup<R>(query, statement);
    if (!statement.readonly) {
      this.writeCount++;
      await this.answerAfterCommit(lease, group);
      return result;
    }
    try {
      await this.answerAfterCommit(lease, group);
      return result;
    } catch {
      // The writes it saw were rolled back (a full disk, say): a read has no effect of its own to
      // lose, so it is asked again of what is committed instead of failing with them.
      await this.hold(lease);
      if (this.group === null) return this.connection.whenFree(() => this.connection.run<R>(query, statement));
      const next = this.group;
      const again = this.runInGroup<R>(query, statement);
      await this.answerAfterCommit(lease, next);
      return again;
    }
  }

  /** The transaction's own savepoint nests the caller's; a savepoint of the same name would take its place. */
  protected override savepointCommand(command: string, name: string): CompiledQuery {
    if (name === TRANSACTION_SAVEPOINT) throw new Error(`the savepoint name '${name}' is reserved by the SQLite driver: choose another`);
    return super.savepointCommand(command, name);
  }

  /** Takes the connection again for a lease that gave it up while waiting for a commit. */
  private async hold(lease: Lease): Promise<void> {
    if (lease.held) return;
    await this.mutex.lock();
    lease.held = true;
  }

  /** Opens a group (BEGIN IMMEDIATE) and schedules its commit. */
  private async openGroup(): Promise<WriteGroup> {
    await this.connection.whenFree(() => this.connection.run(BEGIN_IMMEDIATE));
    const group = new WriteGroup();
    this.group = group;
    setImmediate(() => void this.commitWhenFree(group));
    return group;
  }

  private async commitWhenFree(group: WriteGroup): Promise<void> {
    await this.mutex.lock();
    try {
      if (this.group === group) this.commit(group);
    } finally {
      this.mutex.unlock();
    }
  }

  private commit(group: WriteGroup): void {
    this.group = null;
    try {
      this.connection.run(COMMIT);
      this.commitCount++;
      group.settle(null);
    } catch (err) {
      if (this.connection.inTransaction) this.connection.run(ROLLBACK);
      group.settle(err);
    }
  }

  /** Gives the connection to the next in line while this lease waits for its group's COMMIT. */
  private answerAfterCommit(lease: Lease, group: WriteGroup): Promise<void> {
    lease.held = false;
    this.mutex.unlock();
    return group.committed;
  }

  /** The group a lease's transaction belongs to; it fails once that group is gone. */
  private transactionGroup(lease: Lease): WriteGroup {
    const group = lease.group!;
    if (group !== this.group) throw group.failure ?? new Error('the transaction was rolled back with its write group');
    return group;
  }

  /** Runs a statement inside the open group; a statement that makes SQLite abandon the transaction fails the group. */
  private runInGroup<R>(query: CompiledQuery, statement?: CachedStatement): QueryResult<R> {
    try {
      return this.connection.run(query, statement);
    } catch (err) {
      const group = this.group;
      if (group && !this.connection.inTransaction) {
        this.group = null;
        group.settle(err);
      }
      throw err;
    }
  }
}

/** The savepoint a logical transaction is inside its group (logical transactions never overlap). */
const TRANSACTION_SAVEPOINT = 'switchboard_tx';
const SAVEPOINT = CompiledQuery.raw(`savepoint ${TRANSACTION_SAVEPOINT}`);
const RELEASE = CompiledQuery.raw(`release ${TRANSACTION_SAVEPOINT}`);
const ROLLBACK_TO = CompiledQuery.raw(`rollback to ${TRANSACTION_SAVEPOINT}`);

/** The writes that share one physical transaction. */
class WriteGroup {
  failure: unknown = null;
  readonly committed: Promise<void>;
  private resolve!: () => void;
  private reject!: (err: unknown) => void;

  constructor() {
    this.committed = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // A group nobody waits on (its only write failed alone) must not be an unhandled rejection.
    this.committed.catch(() => undefined);
  }

  settle(err: unknown): void {
    if (err === null) return this.resolve();
    this.failure = err;
    this.reject(err);
  }
}

/** One use of the connection by Kysely: a query, or a transaction from begin to commit. */
class Lease extends SqliteLease {
  held = true;
  /** The group of the transaction this lease is in, or null outside one. */
  group: WriteGroup | null = null;

  constructor(private readonly driver: GroupCommitSqliteDriver) {
    super();
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.driver.execute<R>(this, query);
  }
}
