import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';

/** The lease of the retention worker (the only SQL of worker_leases). */
export class RetentionStore extends Store {
  /**
   * Takes or renews the lease `name` for `holder` until `until`, unless another holder's lease
   * runs past `now`; true when `holder` holds it now. One statement: two nodes cannot both win.
   */
  async acquireLease(tx: Tx, name: string, holder: string, now: number, until: number): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .insertInto('worker_leases')
      .values({ name, holder, expires_at: until })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({ holder, expires_at: until })
          .where((eb) => eb.or([eb('worker_leases.expires_at', '<=', now), eb('worker_leases.holder', '=', holder)])),
      )
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** Gives the lease up (a stopping node), so that another takes it at once. */
  async releaseLease(tx: Tx, name: string, holder: string): Promise<void> {
    await dbOf(tx, this.db)
      .updateTable('worker_leases')
      .set({ expires_at: 0 })
      .where('name', '=', name)
      .where('holder', '=', holder)
      .execute();
  }
}
