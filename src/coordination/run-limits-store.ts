import { sql } from 'kysely';
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

  /**
   * How many runs queued by the rate limit of `key` go before `run` (higher priority, or equal
   * and queued first), counted up to `limit`.
   */
  async queuedAhead(
    tx: Tx,
    planId: string,
    key: string,
    run: { id: string; priority: number; started_at: number },
    limit: number,
  ): Promise<number> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('runs')
      .select('id')
      .where('plan_id', '=', planId)
      .where('status', '=', 'queued')
      .where('blocked_by', '=', 'rate_limit')
      .where('rate_key', '=', key)
      .where('id', '!=', run.id)
      .where((eb) =>
        eb.or([
          eb('priority', '>', run.priority),
          eb.and([
            eb('priority', '=', run.priority),
            eb.or([eb('started_at', '<', run.started_at), eb.and([eb('started_at', '=', run.started_at), eb('id', '<', run.id)])]),
          ]),
        ]),
      )
      .limit(limit)
      .execute();
    return rows.length;
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

  /**
   * Runs held back, by why: queued by a limit (concurrency, rate_limit), or with an agent step
   * waiting for an agent (no_agent, or budget; the only waiting steps with a capability).
   */
  async countBlocked(tx: Tx): Promise<Record<string, number>> {
    const db = dbOf(tx, this.db);
    const queued = await db
      .selectFrom('runs')
      .select((eb) => ['blocked_by', eb.fn.countAll<number | string>().as('count')])
      .where('status', '=', 'queued')
      .groupBy('blocked_by')
      .execute();
    // A step waiting for an agent paused by a budget says so in its detail (run-state.ts StepDetail).
    const reason = sql<string>`case when ${sql.ref('detail')} like '%"blocked_by":"budget"%' then 'budget' else 'no_agent' end`;
    const waiting = await db
      .selectFrom('run_steps')
      .select((eb) => [reason.as('reason'), eb.fn.count<number | string>('run_id').distinct().as('count')])
      .where('status', '=', 'waiting')
      .where('capability', 'is not', null)
      .groupBy(reason)
      .execute();
    const counts: Record<string, number> = { concurrency: 0, rate_limit: 0, no_agent: 0, budget: 0 };
    for (const row of waiting) counts[row.reason] = Number(row.count);
    for (const row of queued) if (row.blocked_by !== null) counts[row.blocked_by] = Number(row.count);
    return counts;
  }
}
