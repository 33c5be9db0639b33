import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { CoordinationStore } from './coordination-store.js';
import { ACTIVE } from './run-list-store.js';

/** The reads of a plan's run limits (the only SQL of them): its active, recent and queued runs of a key. */
export class RunLimitsStore extends CoordinationStore {
  /**
   * Locks the plan's row until `tx` ends (PostgreSQL; SQLite has one writer): starts and queue
   * moves of a limited plan take turns on every node, so a limit counts each run once.
   */
  async lockPlan(tx: Tx, planId: string): Promise<void> {
    await this.lockIf({ lock: true }, dbOf(tx, this.db).selectFrom('plans').select('id').where('id', '=', planId)).execute();
  }

  /** The plan's active runs of a concurrency key, oldest first (at most `limit`). */
  async activeRuns(tx: Tx, planId: string, key: string, limit: number): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('runs')
      .select('id')
      .where('plan_id', '=', planId)
      .where('status', 'in', ACTIVE)
      .where('concurrency_key', '=', key)
      .orderBy('admitted_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  /** When the plan's runs of a rate key let through since `since` were, oldest first (at most `limit`). */
  async admittedSince(tx: Tx, planId: string, key: string, since: number, limit: number): Promise<number[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('runs')
      .select('admitted_at')
      .where('plan_id', '=', planId)
      .where('rate_key', '=', key)
      .where('admitted_at', '>', since)
      .orderBy('admitted_at')
      .limit(limit)
      .execute();
    return rows.map((row) => Number(row.admitted_at));
  }

  /** The queued run of a concurrency key that goes next: highest priority, then first queued. */
  async nextQueued(tx: Tx, planId: string, key: string): Promise<string | undefined> {
    const row = await dbOf(tx, this.db)
      .selectFrom('runs')
      .select('id')
      .where('plan_id', '=', planId)
      .where('status', '=', 'queued')
      .where('concurrency_key', '=', key)
      .orderBy('priority', 'desc')
      .orderBy('started_at')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    return row?.id;
  }

  /** Queued runs by why they wait (the queued runs gauge). */
  async countQueued(tx: Tx): Promise<{ blocked_by: string | null; count: number }[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('runs')
      .select((eb) => ['blocked_by', eb.fn.countAll<number | string>().as('count')])
      .where('status', '=', 'queued')
      .groupBy('blocked_by')
      .execute();
    return rows.map((row) => ({ blocked_by: row.blocked_by, count: Number(row.count) }));
  }
}
