import type { DialectCapabilities } from './capabilities.js';
import type { Db } from './database.js';
import type { Transactor, Tx } from '../kernel/tx.js';
import type { SelectQueryBuilder } from 'kysely';
import type { Page, Paged } from '../kernel/pagination.js';
import { paginate, type PageOptions } from './paginate.js';
import { dbOf, inTransaction } from './tx.js';

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

  /** One page of `query` and the list's total, in `tx` (see db/paginate.ts). */
  protected paginate<DB, TB extends keyof DB, O>(
    tx: Tx,
    query: SelectQueryBuilder<DB, TB, O>,
    window: Page,
    options?: PageOptions,
  ): Promise<Paged<O>> {
    return paginate(this.caps, dbOf(tx, this.db), query, window, options);
  }

  /** Whether `err` is this dialect's unique violation (an insert that raced another). */
  isUniqueViolation(err: unknown): boolean {
    return this.caps.isUniqueViolation(err);
  }
}
