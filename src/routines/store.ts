import type { Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import { BulkInsert } from '../db/bulk-insert.js';
import { nextDue, type DialectCapabilities } from '../db/capabilities.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { TriggerType, ExecutionStatus, RoutinesTable, RoutineExecutionsTable, RoutineFiresTable } from './tables.js';

export type RoutineRow = Selectable<RoutinesTable>;

/** What the routines list filters on; `last_status`: the status of a routine's latest execution. */
export interface RoutineFilter {
  trigger_type?: TriggerType;
  enabled?: boolean;
  last_status?: ExecutionStatus;
}
export type ExecutionRow = Selectable<RoutineExecutionsTable>;
export type FireRow = Selectable<RoutineFiresTable>;

const UNFINISHED: ExecutionStatus[] = ['pending', 'running'];

/** What firing a due routine reads of it (the claim selects no more). */
const DUE_COLUMNS = [
  'id',
  'cron_expression',
  'timezone',
  'target_agent',
  'payload',
  'catch_up',
  'overlap',
  'timeout_seconds',
  'next_run_at',
  'last_run_at',
] as const satisfies readonly (keyof RoutineRow)[];
export type DueRoutine = Pick<RoutineRow, (typeof DUE_COLUMNS)[number]>;

const FIRE_TEMPLATE: Record<keyof FireRow, null> = {
  id: null,
  routine_id: null,
  scheduled_for: null,
  outcome: null,
  reason: null,
  execution_id: null,
  created_at: null,
};

const EXECUTION_TEMPLATE: Record<keyof ExecutionRow, null> = {
  id: null,
  routine_id: null,
  status: null,
  trigger: null,
  payload: null,
  scheduled_for: null,
  message_id: null,
  output: null,
  deadline_at: null,
  created_at: null,
  started_at: null,
  completed_at: null,
};

export class RoutinesStore extends Store {
  /** A slot already in the ledger is left alone (ON CONFLICT DO NOTHING). */
  private readonly fireInsert: BulkInsert<'routine_fires', keyof FireRow>;
  private readonly executionInsert: BulkInsert<'routine_executions', keyof ExecutionRow>;
  /**
   * How many fire batches may claim at once: two where each claim skips the other's locked rows
   * (PostgreSQL); one on SQLite, whose single connection would only queue a second behind the first.
   */
  readonly fireLanes: number;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.fireLanes = caps.skipLocked ? 2 : 1;
    this.fireInsert = new BulkInsert(db, 'routine_fires', FIRE_TEMPLATE, {
      columnar: caps,
      clauses: (insert) => insert.onConflict((oc) => oc.columns(['routine_id', 'scheduled_for']).doNothing()),
    });
    this.executionInsert = new BulkInsert(db, 'routine_executions', EXECUTION_TEMPLATE, { columnar: caps });
  }

  async insertRoutine(tx: Tx, row: RoutineRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('routines').values(row).execute();
  }

  async findRoutine(tx: Tx, id: string): Promise<RoutineRow | undefined> {
    return dbOf(tx, this.db).selectFrom('routines').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findRoutineByTokenHash(tx: Tx, hash: string): Promise<RoutineRow | undefined> {
    return dbOf(tx, this.db).selectFrom('routines').selectAll().where('webhook_token_hash', '=', hash).executeTakeFirst();
  }

  async listRoutines(tx: Tx, filter: RoutineFilter, window: Page): Promise<Paged<RoutineRow>> {
    let query = dbOf(tx, this.db).selectFrom('routines').selectAll().orderBy('id');
    if (filter.trigger_type !== undefined) query = query.where('trigger_type', '=', filter.trigger_type);
    if (filter.enabled !== undefined) query = query.where('enabled', '=', filter.enabled ? 1 : 0);
    if (filter.last_status !== undefined) {
      // Execution ids sort in creation order: the latest is the greatest.
      const status = filter.last_status;
      query = query.where((eb) =>
        eb(
          eb
            .selectFrom('routine_executions as e')
            .select('e.status')
            .whereRef('e.routine_id', '=', 'routines.id')
            .orderBy('e.id', 'desc')
            .limit(1),
          '=',
          status,
        ),
      );
    }
    return this.paginate(tx, query, window);
  }

  async updateRoutine(tx: Tx, id: string, changes: Partial<RoutineRow>): Promise<void> {
    await dbOf(tx, this.db).updateTable('routines').set(changes).where('id', '=', id).execute();
  }

  /** Deletes a routine with its executions and fires; returns the message ids still outstanding. */
  async deleteRoutine(tx: Tx, id: string): Promise<string[]> {
    const db = dbOf(tx, this.db);
    const open = await db
      .selectFrom('routine_executions')
      .select('message_id')
      .where('routine_id', '=', id)
      .where('status', 'in', UNFINISHED)
      .where('message_id', 'is not', null)
      .execute();
    await db.deleteFrom('routine_fires').where('routine_id', '=', id).execute();
    await db.deleteFrom('routine_executions').where('routine_id', '=', id).execute();
    await db.deleteFrom('routines').where('id', '=', id).execute();
    return open.map((r) => r.message_id!);
  }

  /**
   * Claims up to `limit` enabled cron routines due at `now`, with the columns a fire needs. On
   * PostgreSQL the rows stay locked (SKIP LOCKED) until the transaction ends, so another node
   * takes different ones.
   */
  async claimDueRoutines(tx: Tx, now: number, limit: number): Promise<DueRoutine[]> {
    return this.caps
      .claim(
        dbOf(tx, this.db)
          .selectFrom('routines')
          .select(DUE_COLUMNS)
          .where('enabled', '=', 1)
          .where('trigger_type', '=', 'cron')
          .where('next_run_at', '<=', now)
          .orderBy('next_run_at')
          .limit(limit),
      )
      .execute();
  }

  /** The earliest next_run_at of enabled cron routines (the scheduler sleeps until then). */
  async nextDueAt(tx: Tx): Promise<number | null> {
    const row = await dbOf(tx, this.db)
      .selectFrom('routines')
      .select((eb) => eb.fn.min('next_run_at').as('next'))
      .where('enabled', '=', 1)
      .where('trigger_type', '=', 'cron')
      .executeTakeFirst();
    return nextDue(row);
  }

  /** Routine ids among `ids` with an execution still pending or running. */
  async routinesWithOpenExecutions(tx: Tx, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await dbOf(tx, this.db)
      .selectFrom('routine_executions')
      .select('routine_id')
      .distinct()
      .where('routine_id', 'in', ids)
      .where('status', 'in', UNFINISHED)
      .execute();
    return new Set(rows.map((r) => r.routine_id));
  }

  /**
   * Writes ledger rows; returns the ones that were new. The unique (routine_id, scheduled_for)
   * key is what makes a slot fire once, whatever raced for it. Nearly always every row is new,
   * which the insert's row count says; only when some were not are the new ones looked up (a
   * fire's id is made for this insert, so a stored one is ours). RETURNING every id instead
   * made the insert half as slow again (2,000 fires on SQLite: 17 against 11 ms, measured).
   */
  async insertFires(tx: Tx, rows: FireRow[]): Promise<FireRow[]> {
    const db = dbOf(tx, this.db);
    if ((await this.fireInsert.count(db, rows)) === rows.length) return rows;
    const stored = await db
      .selectFrom('routine_fires')
      .select('id')
      .where(
        this.caps.inTextList(
          'id',
          rows.map((r) => r.id),
        ),
      )
      .execute();
    const ids = new Set(stored.map((r) => r.id));
    return rows.filter((r) => ids.has(r.id));
  }

  async insertExecutions(tx: Tx, rows: ExecutionRow[]): Promise<void> {
    await this.executionInsert.run(dbOf(tx, this.db), rows);
  }

  /**
   * Writes the scheduling fields of many claimed routines: one UPDATE per distinct
   * (next_run_at, last_run_at) pair — routines due together mostly share it — with the ids
   * as one parameter (500-id IN lists took 20 statements and 108 ms of 10,000 fires on PostgreSQL).
   */
  async saveSchedules(tx: Tx, rows: Pick<RoutineRow, 'id' | 'next_run_at' | 'last_run_at'>[]): Promise<void> {
    const groups = new Map<string, { next_run_at: number | null; last_run_at: number | null; ids: string[] }>();
    for (const row of rows) {
      const key = `${row.next_run_at}|${row.last_run_at}`;
      let group = groups.get(key);
      if (!group) groups.set(key, (group = { next_run_at: row.next_run_at, last_run_at: row.last_run_at, ids: [] }));
      group.ids.push(row.id);
    }
    for (const { ids, ...changes } of groups.values()) {
      await dbOf(tx, this.db).updateTable('routines').set(changes).where(this.caps.inTextList('id', ids)).execute();
    }
  }

  async findExecution(tx: Tx, id: string): Promise<ExecutionRow | undefined> {
    return dbOf(tx, this.db).selectFrom('routine_executions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async listExecutions(tx: Tx, routineId: string, status: ExecutionStatus | undefined, window: Page): Promise<Paged<ExecutionRow>> {
    let query = dbOf(tx, this.db).selectFrom('routine_executions').selectAll().where('routine_id', '=', routineId).orderBy('id', 'desc');
    if (status !== undefined) query = query.where('status', '=', status);
    return this.paginate(tx, query, window);
  }

  async listFires(tx: Tx, routineId: string, window: Page): Promise<Paged<FireRow>> {
    const query = dbOf(tx, this.db)
      .selectFrom('routine_fires')
      .selectAll()
      .where('routine_id', '=', routineId)
      .orderBy('scheduled_for', 'desc');
    return this.paginate(tx, query, window);
  }

  async deleteExecution(tx: Tx, id: string): Promise<boolean> {
    const result = await dbOf(tx, this.db).deleteFrom('routine_executions').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Moves an unfinished execution; false when it had already finished (or is gone). */
  async transitionExecution(
    tx: Tx,
    id: string,
    from: ExecutionStatus[],
    changes: Partial<Pick<ExecutionRow, 'status' | 'output' | 'started_at' | 'completed_at' | 'message_id'>>,
  ): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .updateTable('routine_executions')
      .set(changes)
      .where('id', '=', id)
      .where('status', 'in', from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Unfinished executions past their deadline, locked for this node on PostgreSQL. */
  async claimTimedOut(tx: Tx, now: number, limit: number): Promise<ExecutionRow[]> {
    return this.caps
      .claim(
        dbOf(tx, this.db)
          .selectFrom('routine_executions')
          .selectAll()
          .where('status', 'in', UNFINISHED)
          .where('deadline_at', '<=', now)
          .orderBy('deadline_at')
          .limit(limit),
      )
      .execute();
  }

  async nextDeadline(tx: Tx): Promise<number | null> {
    const row = await dbOf(tx, this.db)
      .selectFrom('routine_executions')
      .select((eb) => eb.fn.min('deadline_at').as('next'))
      .where('status', 'in', UNFINISHED)
      .executeTakeFirst();
    return nextDue(row);
  }

  /** Deletes up to `limit` finished executions that ended before `before`; answers how many. */
  async deleteExecutionsEndedBefore(tx: Tx, before: number, limit: number): Promise<number> {
    const db = dbOf(tx, this.db);
    const old = db
      .selectFrom('routine_executions')
      .select('id')
      .where('completed_at', '<', before)
      .where('status', 'not in', UNFINISHED)
      .orderBy('completed_at')
      .limit(limit);
    const result = await db.deleteFrom('routine_executions').where('id', 'in', old).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Deletes up to `limit` fires recorded before `before`; answers how many. */
  async deleteFiresBefore(tx: Tx, before: number, limit: number): Promise<number> {
    const db = dbOf(tx, this.db);
    const old = db.selectFrom('routine_fires').select('id').where('created_at', '<', before).orderBy('created_at').limit(limit);
    const result = await db.deleteFrom('routine_fires').where('id', 'in', old).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
