import { autocommit, type Tx } from '../kernel/tx.js';
import type { Db } from './database.js';

/** For stores and db/: wraps a Kysely transaction (or handle) to hand to services. */
export function txOf(trx: Db): Tx {
  return trx as unknown as Tx;
}

/** For stores and db/: the transaction `tx` stands for, or null under `autocommit`. */
export function openTransaction(tx: Tx): Db | null {
  return tx === autocommit ? null : (tx as unknown as Db);
}

/** For stores and db/: the Kysely handle to run a statement on (`db` itself under `autocommit`). */
export function dbOf(tx: Tx, db: Db): Db {
  return openTransaction(tx) ?? db;
}

/**
 * For stores: runs `work` in `tx`'s transaction, or in a new one under `autocommit`, so a
 * method's statements commit together whatever the caller passes.
 */
export function atomically<T>(tx: Tx, db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  const trx = openTransaction(tx);
  return trx ? work(trx) : db.transaction().execute(work);
}

/** Work a transaction of `inTransaction` runs after its own, before it commits (see `atCommit`). */
const LAST_WORK = Symbol('lastWork');
/** Marks a transaction of `inTransaction` with no last work yet (most have none: no array each). */
const NO_LAST_WORK: readonly (() => Promise<void>)[] = Object.freeze([]);
type WithLastWork = Db & { [LAST_WORK]?: readonly (() => Promise<void>)[] };

/** For stores implementing Transactor: `work` in one transaction of `db`, seeing only a Tx. */
export function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    (trx as WithLastWork)[LAST_WORK] = NO_LAST_WORK;
    const result = await work(txOf(trx));
    for (const step of (trx as WithLastWork)[LAST_WORK]!) await step();
    return result;
  });
}

/**
 * Runs `step` in `tx` once its work is done, just before it commits; false under `autocommit`
 * or a transaction not opened by `inTransaction` (nothing to defer to: run it now). The audit
 * trail appends there: its intent is known where a change begins, and the log's append lock
 * (held to the commit on PostgreSQL) is taken last, after the rows the work locked, as the
 * event log's is.
 */
export function atCommit(tx: Tx, step: () => Promise<void>): boolean {
  const trx = openTransaction(tx) as WithLastWork | null;
  const last = trx?.[LAST_WORK];
  if (!last) return false;
  trx[LAST_WORK] = [...last, step];
  return true;
}
