import type { Tx } from '../kernel/tx.js';
import { atomically, dbOf } from '../db/tx.js';
import { CoordinationStore } from './coordination-store.js';
import type { RunStatus } from './tables.js';

const DAY_MS = 86_400_000;
const FINISHED: RunStatus[] = ['completed', 'failed', 'cancelled'];
/** The tables that hold a run's parts, by its id. */
const PARTS = ['run_steps', 'run_events', 'run_tags', 'run_metadata', 'run_step_checkpoints', 'run_step_logs'] as const;

/** Retention of runs and trigger fires (the SQL that deletes them). */
export class RunRetentionStore extends CoordinationStore {
  /**
   * Deletes up to `limit` top-level runs that finished more than their retention ago at `now`
   * (their plan's `retention_days`, else `defaultDays`), each with its child runs (at any depth)
   * and their steps, timelines, tags and metadata; a tree with a child still unfinished stays
   * whole. Answers the rows deleted by table, and how many top-level runs it looked at.
   */
  async deleteFinished(
    tx: Tx,
    now: number,
    defaultDays: number,
    limit: number,
  ): Promise<{ seen: number; deleted: Record<string, number>; runIds: string[] }> {
    return atomically(tx, this.db, async (trx) => {
      // One index range per retention: the server's, then each one plans set (few distinct values).
      const overrides = await trx
        .selectFrom('runs')
        .select('retention_days')
        .distinct()
        .where('parent_run_id', 'is', null)
        .where('retention_days', 'is not', null)
        .execute();
      const roots: { id: string; status: RunStatus }[] = [];
      for (const days of [null, ...overrides.map((row) => row.retention_days)]) {
        if (roots.length >= limit) break;
        const rows = await trx
          .selectFrom('runs')
          .select(['id', 'status'])
          .where('parent_run_id', 'is', null)
          .where('retention_days', days === null ? 'is' : '=', days)
          .where('completed_at', '<', now - (days ?? defaultDays) * DAY_MS)
          .orderBy('completed_at')
          .limit(limit - roots.length)
          .execute();
        roots.push(...rows);
      }
      const deleted: Record<string, number> = { runs: 0 };
      // The root of every run of the batch, level by level down the trees.
      const rootOf = new Map<string, string>();
      const unfinished = new Set<string>();
      for (const root of roots) {
        rootOf.set(root.id, root.id);
        if (!FINISHED.includes(root.status)) unfinished.add(root.id);
      }
      let level = [...rootOf.keys()];
      while (level.length > 0) {
        const children = await trx
          .selectFrom('runs')
          .select(['id', 'parent_run_id', 'completed_at'])
          .where(this.caps.inTextList('parent_run_id', level))
          .execute();
        for (const child of children) {
          const root = rootOf.get(child.parent_run_id!)!;
          rootOf.set(child.id, root);
          if (child.completed_at === null) unfinished.add(root);
        }
        level = children.map((child) => child.id);
      }
      const ids = [...rootOf].filter(([, root]) => !unfinished.has(root)).map(([id]) => id);
      if (ids.length === 0) return { seen: roots.length, deleted, runIds: [] };
      for (const table of PARTS) {
        const result = await trx.deleteFrom(table).where(this.caps.inTextList('run_id', ids)).executeTakeFirst();
        deleted[table] = Number(result.numDeletedRows);
      }
      const runs = await trx.deleteFrom('runs').where(this.caps.inTextList('id', ids)).executeTakeFirst();
      deleted.runs = Number(runs.numDeletedRows);
      return { seen: roots.length, deleted, runIds: ids };
    });
  }

  /** Deletes up to `limit` trigger fires recorded before `before`; answers how many. */
  async deleteFiresBefore(tx: Tx, before: number, limit: number): Promise<number> {
    const db = dbOf(tx, this.db);
    const old = db.selectFrom('trigger_fires').select('id').where('created_at', '<', before).orderBy('created_at').limit(limit);
    const result = await db.deleteFrom('trigger_fires').where('id', 'in', old).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
