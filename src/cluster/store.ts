import type { Selectable } from 'kysely';
import { Store } from '../db/store.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { ClusterNodesTable } from './tables.js';

export type NodeRow = Selectable<ClusterNodesTable>;

export class ClusterStore extends Store {
  async insertNode(tx: Tx, row: NodeRow): Promise<void> {
    // Once only: a registration postponed for lack of space may come after the heartbeat's.
    await dbOf(tx, this.db)
      .insertInto('cluster_nodes')
      .values(row)
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  /**
   * The heartbeat: one UPDATE of this node's row. False when the row is gone (swept while this
   * node could not reach the database for a day): the caller inserts it again.
   */
  async touch(tx: Tx, id: string, now: number): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .updateTable('cluster_nodes')
      .set({ last_seen_at: now, stopped_at: null })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async markStopped(tx: Tx, id: string, now: number): Promise<void> {
    await dbOf(tx, this.db).updateTable('cluster_nodes').set({ last_seen_at: now, stopped_at: now }).where('id', '=', id).execute();
  }

  /** The nodes seen since `since` that have not stopped. */
  async liveNodeIds(tx: Tx, since: number): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('cluster_nodes')
      .select('id')
      .where('stopped_at', 'is', null)
      .where('last_seen_at', '>=', since)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Nodes first started first. */
  async listNodes(tx: Tx, window: Page): Promise<Paged<NodeRow>> {
    return this.paginate(tx, dbOf(tx, this.db).selectFrom('cluster_nodes').selectAll().orderBy('started_at').orderBy('id'), window);
  }

  /**
   * Adds `slice` to what is leased of a budget in a window, in one statement (an upsert whose
   * row lock serializes nodes leasing the same budget); returns the total leased after it.
   */
  async lease(tx: Tx, bucket: string, windowStart: number, slice: number): Promise<number> {
    const row = await dbOf(tx, this.db)
      .insertInto('rate_limit_windows')
      .values({ bucket, window_start: windowStart, leased: slice })
      .onConflict((oc) =>
        oc.columns(['bucket', 'window_start']).doUpdateSet((eb) => ({ leased: eb('rate_limit_windows.leased', '+', slice) })),
      )
      .returning('leased')
      .executeTakeFirstOrThrow();
    return Number(row.leased);
  }

  /** What is leased of a budget in a window (0 when nothing yet). */
  async leased(tx: Tx, bucket: string, windowStart: number): Promise<number> {
    const row = await dbOf(tx, this.db)
      .selectFrom('rate_limit_windows')
      .select('leased')
      .where('bucket', '=', bucket)
      .where('window_start', '=', windowStart)
      .executeTakeFirst();
    return row ? Number(row.leased) : 0;
  }

  async sweepWindows(tx: Tx, before: number): Promise<void> {
    await dbOf(tx, this.db).deleteFrom('rate_limit_windows').where('window_start', '<', before).execute();
  }

  /** Deletes the rows of nodes last seen before `before`; returns how many. */
  async sweep(tx: Tx, before: number): Promise<number> {
    const result = await dbOf(tx, this.db).deleteFrom('cluster_nodes').where('last_seen_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
