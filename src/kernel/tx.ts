declare const opaque: unique symbol;

/**
 * Where a store method runs its statements: inside a transaction, or `autocommit`. Services
 * and the kernel only pass it along; they cannot run SQL with it, and a store method takes it
 * as its first parameter with no default, so leaving it out (or handing over a Kysely handle)
 * is a type error, never a silent escape from the caller's transaction. At run time it is the
 * Kysely transaction itself: passing one costs nothing.
 */
export interface Tx {
  readonly [opaque]: 'Tx';
}

/**
 * Each statement commits on its own. Inside `inTransaction`, pass its `tx` instead: on SQLite
 * the one connection is held by the transaction, and a statement outside it waits for it.
 */
export const autocommit: Tx = Object.freeze({ autocommit: true }) as unknown as Tx;

/** Runs work in one transaction, for services (stores and db/ provide it). */
export interface Transactor {
  /** Commits when `work` resolves, rolls back when it throws (and rethrows). */
  inTransaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
}
