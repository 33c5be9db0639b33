import { sql, type Insertable, type Selectable } from 'kysely';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { CoordinationStore } from './coordination-store.js';
import type { CheckpointRow } from './step-work-store.js';
import type { RunStatus, RunsTable, RunStepsTable, RunEventsTable } from './tables.js';

/** Which runs a list shows: times in ms, `startedAfter` inclusive and `startedBefore` exclusive. */
export interface RunFilter {
  planId?: string;
  status?: RunStatus;
  startedAfter?: number;
  startedBefore?: number;
  tag?: string;
  /** A key and the value it must have in the run's metadata. */
  metadata?: { key: string; value: string };
}

/** What a run is found by besides its plan, status and times. */
export interface RunLabels {
  tags: string[];
  metadata: Record<string, string>;
}

/** A waiting human step, as the approvals inbox lists it. */
export interface PendingHumanStepRow {
  run_id: string;
  step_id: string;
  input: string | null;
  detail: string;
  started_at: number | null;
  wake_at: number | null;
  plan_id: string;
  run_input: string;
}
export type RunRow = Selectable<RunsTable>;
export type RunStepRow = Selectable<RunStepsTable>;
export type RunEventRow = Selectable<RunEventsTable>;
export type NewRunEvent = Omit<Insertable<RunEventsTable>, 'seq'>;
/** The statuses of runs still under way. */
export const ACTIVE: RunStatus[] = ['running', 'waiting'];
const FINISHED_RUNS: RunStatus[] = ['completed', 'failed', 'cancelled'];

/** What a bulk replay filters by. */
type ReplayFilter = RunFilter & { error?: string; createdBy?: string };

/**
 * The reads of runs that callers list and planners ask (runs by filter, the approvals inbox,
 * timelines, tags and metadata, step durations); RunStore (run-store.ts) adds what the engine
 * loads and saves.
 */
export abstract class RunListStore extends CoordinationStore {
  /** The tags (in name order) and metadata of several runs, by run, in two queries. */
  async labelsOfRuns(tx: Tx, runIds: string[]): Promise<Map<string, RunLabels>> {
    const byRun = new Map<string, RunLabels>(runIds.map((id) => [id, { tags: [], metadata: {} }]));
    if (runIds.length === 0) return byRun;
    const db = dbOf(tx, this.db);
    const tags = await db
      .selectFrom('run_tags')
      .select(['run_id', 'tag'])
      .where('run_id', 'in', runIds)
      .orderBy('run_id')
      .orderBy('tag')
      .execute();
    for (const row of tags) byRun.get(row.run_id)!.tags.push(row.tag);
    const metadata = await db
      .selectFrom('run_metadata')
      .select(['run_id', 'key', 'value'])
      .where('run_id', 'in', runIds)
      .orderBy('run_id')
      .orderBy('key')
      .execute();
    for (const row of metadata) byRun.get(row.run_id)!.metadata[row.key] = row.value;
    return byRun;
  }

  /** The latest checkpoint of each step of several runs that has one, by run and step. */
  async checkpointsOfRuns(tx: Tx, runIds: string[]): Promise<Map<string, Map<string, CheckpointRow>>> {
    const byRun = new Map<string, Map<string, CheckpointRow>>(runIds.map((id) => [id, new Map()]));
    if (runIds.length === 0) return byRun;
    const rows = await dbOf(tx, this.db).selectFrom('run_step_checkpoints').selectAll().where('run_id', 'in', runIds).execute();
    for (const row of rows) byRun.get(row.run_id)!.set(row.step_id, row);
    return byRun;
  }

  async listRuns(tx: Tx, filter: RunFilter, window: Page): Promise<Paged<RunRow>> {
    let query = dbOf(tx, this.db).selectFrom('runs').selectAll();
    if (filter.planId !== undefined) query = query.where('plan_id', '=', filter.planId);
    if (filter.status !== undefined) query = query.where('status', '=', filter.status);
    if (filter.startedAfter !== undefined) query = query.where('started_at', '>=', filter.startedAfter);
    if (filter.startedBefore !== undefined) query = query.where('started_at', '<', filter.startedBefore);
    if (filter.tag !== undefined) {
      const tag = filter.tag;
      query = query.where('id', 'in', (eb) => eb.selectFrom('run_tags').select('run_id').where('tag', '=', tag));
    }
    if (filter.metadata !== undefined) {
      const { key, value } = filter.metadata;
      query = query.where('id', 'in', (eb) =>
        eb.selectFrom('run_metadata').select('run_id').where('key', '=', key).where('value', '=', value),
      );
    }
    return this.paginate(tx, query, window, { keyset: [{ column: 'id', direction: 'desc', type: 'string' }] });
  }

  /**
   * Finished top-level runs a bulk replay takes, oldest first, at most `limit`: of `createdBy`
   * when set, and whose error contains `error` when set.
   */
  async replayable(tx: Tx, filter: ReplayFilter, limit: number): Promise<RunRow[]> {
    return this.replayQuery(tx, filter).selectAll().orderBy('id').limit(limit).execute();
  }

  /** How many runs `replayable` would take without its limit. */
  async countReplayable(tx: Tx, filter: ReplayFilter): Promise<number> {
    const row = await this.replayQuery(tx, filter)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  private replayQuery(tx: Tx, filter: ReplayFilter) {
    let query = dbOf(tx, this.db)
      .selectFrom('runs')
      .where('parent_run_id', 'is', null)
      .where('status', 'in', filter.status === undefined ? FINISHED_RUNS : [filter.status]);
    if (filter.planId !== undefined) query = query.where('plan_id', '=', filter.planId);
    if (filter.startedAfter !== undefined) query = query.where('started_at', '>=', filter.startedAfter);
    if (filter.startedBefore !== undefined) query = query.where('started_at', '<', filter.startedBefore);
    if (filter.createdBy !== undefined) query = query.where('created_by', '=', filter.createdBy);
    if (filter.error !== undefined) {
      const pattern = `%${filter.error.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      query = query.where(sql<boolean>`error like ${pattern} escape '\\'`);
    }
    return query;
  }

  /**
   * The human steps waiting for a person (only human steps wait; a wait step runs), oldest
   * first, with their run's plan and input.
   */
  async listWaitingHumanSteps(tx: Tx, window: Page, of: { runId?: string; stepId?: string } = {}): Promise<Paged<PendingHumanStepRow>> {
    let query = dbOf(tx, this.db)
      .selectFrom('run_steps as s')
      .innerJoin('runs as r', 'r.id', 's.run_id')
      .select(['s.run_id', 's.step_id', 's.input', 's.detail', 's.started_at', 's.wake_at', 'r.plan_id', 'r.input as run_input'])
      .where('r.status', 'in', ACTIVE)
      .where('s.status', '=', 'waiting')
      .orderBy('s.started_at')
      .orderBy('s.run_id')
      .orderBy('s.step_id');
    if (of.runId !== undefined) query = query.where('s.run_id', '=', of.runId);
    if (of.stepId !== undefined) query = query.where('s.step_id', '=', of.stepId);
    return this.paginate(tx, query, window);
  }

  async listEvents(tx: Tx, runId: string, window: Page): Promise<Paged<RunEventRow>> {
    return this.paginate(tx, dbOf(tx, this.db).selectFrom('run_events').selectAll().where('run_id', '=', runId).orderBy('seq'), window);
  }

  /** Durations (ms) of the latest completed agent steps of each capability, up to `sample` each. */
  async stepDurations(tx: Tx, capabilities: string[], sample = 50): Promise<Map<string, number[]>> {
    const durations = new Map<string, number[]>(capabilities.map((c) => [c, []]));
    if (capabilities.length === 0) return durations;
    const rows = await dbOf(tx, this.db)
      .selectFrom('run_steps')
      .select(['capability', 'started_at', 'completed_at'])
      .where('capability', 'in', capabilities)
      .where('status', '=', 'completed')
      .orderBy('completed_at', 'desc')
      .limit(sample * capabilities.length)
      .execute();
    for (const row of rows) {
      const list = durations.get(row.capability!)!;
      if (list.length < sample && row.started_at !== null && row.completed_at !== null)
        list.push(Number(row.completed_at) - Number(row.started_at));
    }
    return durations;
  }
}
