import type { SelectQueryBuilder } from 'kysely';
import type { Database } from '../db/schema.js';
import { Store } from '../db/store.js';
import type { Tx } from '../kernel/tx.js';
import { inTransaction } from '../db/tx.js';

/**
 * What coordination's stores (plans, runs, triggers) share: transactions that run again after a
 * deadlock, and locked reads.
 */
export abstract class CoordinationStore extends Store {
  /**
   * Runs `work` in a transaction, again (up to 3 times) when PostgreSQL aborts it to break a
   * deadlock: a cancel or a timer locks a run and then its message, an acknowledgement the reverse.
   */
  override async inTransaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await inTransaction(this.db, work);
      } catch (err) {
        if (attempt >= 3 || !this.caps.isTransientConflict(err)) throw err;
      }
    }
  }

  /** `query`, locked (PostgreSQL `FOR UPDATE`) with `lock`: the read of a row about to be updated. */
  protected lockIf<TB extends keyof Database, O>(
    options: { lock?: boolean },
    query: SelectQueryBuilder<Database, TB, O>,
  ): SelectQueryBuilder<Database, TB, O> {
    return options.lock === true ? this.caps.lock(query) : query;
  }
}
