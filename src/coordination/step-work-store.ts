import type { Selectable } from 'kysely';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { CoordinationStore } from './coordination-store.js';
import type { RunStepCheckpointsTable, RunStepLogsTable } from './tables.js';

export type CheckpointRow = Selectable<RunStepCheckpointsTable>;
export type StepLogRow = Selectable<RunStepLogsTable>;

/** What agents keep of their work on a step: its latest checkpoint and its log lines (the SQL). */
export class StepWorkStore extends CoordinationStore {
  /** The step's agent, attempt, status and message, with its run locked (PostgreSQL): no transition moves it meanwhile. */
  async lockedStep(tx: Tx, runId: string, stepId: string) {
    const db = dbOf(tx, this.db);
    const run = await this.caps.lock(db.selectFrom('runs').select('id').where('id', '=', runId)).executeTakeFirst();
    if (!run) return undefined;
    return db
      .selectFrom('run_steps')
      .select(['agent_id', 'attempt', 'status', 'message_id'])
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .executeTakeFirst();
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
}
