import type { DialectCapabilities } from './capabilities.js';
import type { Db } from './database.js';
import type { Transactor, Tx } from '../kernel/tx.js';
import { inTransaction } from './tx.js';

/**
 * What every domain's store starts from: the database handle and its dialect's capabilities,
 * and transactions for its service (`Transactor`).
 */
export abstract class Store implements Transactor {
  constructor(
    protected readonly db: Db,
    protected readonly caps: DialectCapabilities,
  ) {}

  inTransaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return inTransaction(this.db, work);
  }

  /** Whether `err` is this dialect's unique violation (an insert that raced another). */
  isUniqueViolation(err: unknown): boolean {
    return this.caps.isUniqueViolation(err);
  }
}
