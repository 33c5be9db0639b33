import type { Selectable } from 'kysely';
import type { Tx } from '../kernel/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { dbOf } from '../db/tx.js';
import { CoordinationStore } from './coordination-store.js';
import type { RunStepCheckpointsTable, RunStepLogsTable } from './tables.js';

export type CheckpointRow = Selectable<RunStepCheckpointsTable>;
export type StepLogRow = Selectable<RunStepLogsTable>;

/** What agents keep of their work on a step: its latest checkpoint and its log lines (the SQL). */
export class StepWorkStore extends CoordinationStore {
  /**
   * The step's agent, attempt, status and message, and its run's status, with the run locked
   * (PostgreSQL): no transition moves it meanwhile.
   */
  async lockedStep(tx: Tx, runId: string, stepId: string) {
    const db = dbOf(tx, this.db);
    const run = await this.caps.lock(db.selectFrom('runs').select('status').where('id', '=', runId)).executeTakeFirst();
    if (!run) return undefined;
    const step = await db
      .selectFrom('run_steps')
      .select(['agent_id', 'attempt', 'status', 'message_id'])
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .executeTakeFirst();
    return step && { ...step, run_status: run.status };
  }

  /** The newest run that reran `runId`, if any. */
  async rerunOf(tx: Tx, runId: string): Promise<string | undefined> {
    const row = await dbOf(tx, this.db)
      .selectFrom('runs')
      .select('id')
      .where('rerun_of', '=', runId)
      .orderBy('id', 'desc')
      .executeTakeFirst();
    return row?.id;
  }

  async runExists(tx: Tx, runId: string): Promise<boolean> {
    return (await dbOf(tx, this.db).selectFrom('runs').select('id').where('id', '=', runId).executeTakeFirst()) !== undefined;
  }

  async saveCheckpoint(tx: Tx, row: CheckpointRow): Promise<void> {
    await dbOf(tx, this.db)
      .insertInto('run_step_checkpoints')
      .values(row)
      .onConflict((c) => c.columns(['run_id', 'step_id']).doUpdateSet({ state: row.state, attempt: row.attempt, saved_at: row.saved_at }))
      .execute();
  }

  async checkpointOf(tx: Tx, runId: string, stepId: string): Promise<CheckpointRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('run_step_checkpoints')
      .selectAll()
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .executeTakeFirst();
  }

  /** How many lines the step's log holds. */
  async logLength(tx: Tx, runId: string, stepId: string): Promise<number> {
    const row = await dbOf(tx, this.db)
      .selectFrom('run_step_logs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async appendLog(tx: Tx, row: Omit<StepLogRow, 'seq'>): Promise<StepLogRow> {
    const { seq } = await dbOf(tx, this.db).insertInto('run_step_logs').values(row).returning('seq').executeTakeFirstOrThrow();
    return { ...row, seq: Number(seq) };
  }

  /** A run's log lines (of one step, or of all), oldest first. */
  async logsOf(tx: Tx, runId: string, stepId: string | undefined, window: Page): Promise<Paged<StepLogRow>> {
    let query = dbOf(tx, this.db).selectFrom('run_step_logs').where('run_id', '=', runId);
    if (stepId !== undefined) query = query.where('step_id', '=', stepId);
    return this.paginate(tx, query.selectAll().orderBy('seq'), window);
  }
}
