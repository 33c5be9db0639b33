import { sql, type InsertQueryBuilder, type QueryCreator } from 'kysely';
import type { Db } from '../db/database.js';
import { nextDue, type DialectCapabilities } from '../db/capabilities.js';
import type { Database } from '../db/schema.js';
import { BulkInsert } from '../db/bulk-insert.js';
import { Statements } from '../db/statements.js';
import type { Tx } from '../kernel/tx.js';
import { atomically, dbOf } from '../db/tx.js';
import { ACTIVE, RunListStore, type NewRunEvent, type RunLabels, type RunRow, type RunStepRow } from './run-list-store.js';

type RunStateColumn =
  | 'status'
  | 'blocked_by'
  | 'admitted_at'
  | 'output'
  | 'output_ref'
  | 'error'
  | 'revisions'
  | 'wake_at'
  | 'revision'
  | 'completed_at'
  | 'updated_at';

// Every column of the rows inserted on hot paths (a run started, its steps and timeline),
// each null: typed as full records, so a column added to a table cannot be left out.
const RUN_TEMPLATE: Record<keyof RunRow, null> = {
  id: null,
  plan_id: null,
  plan_version: null,
  definition: null,
  status: null,
  input: null,
  event: null,
  output: null,
  error: null,
  adaptive: null,
  revisions: null,
  parent_run_id: null,
  parent_step_id: null,
  depth: null,
  created_by: null,
  wake_at: null,
  revision: null,
  started_at: null,
  completed_at: null,
  updated_at: null,
  traceparent: null,
  retention_days: null,
  priority: null,
  concurrency_key: null,
  rate_key: null,
  blocked_by: null,
  admitted_at: null,
  rerun_of: null,
  output_ref: null,
};
const STEP_TEMPLATE: Record<keyof RunStepRow, null> = {
  run_id: null,
  step_id: null,
  position: null,
  parent_step_id: null,
  item_index: null,
  item: null,
  status: null,
  attempt: null,
  agent_id: null,
  capability: null,
  message_id: null,
  child_run_id: null,
  input: null,
  input_ref: null,
  output: null,
  output_ref: null,
  error: null,
  wake_at: null,
  wait_topic: null,
  detail: null,
  started_at: null,
  completed_at: null,
};
const EVENT_TEMPLATE: Record<keyof NewRunEvent, null> = { run_id: null, step_id: null, type: null, detail: null, created_at: null };
/** Bound values of the one-statement insert of new runs on PostgreSQL at most (its limit is 65,535). */
const MAX_CTE_BOUND = 10_000;

/** A saved transition of an existing run: its row, its new and changed steps, its new events. */
export interface Transition {
  run: RunRow;
  steps: RunStepRow[];
  events: NewRunEvent[];
}

/** New runs with their steps and timeline events, written together. */
export interface NewRuns {
  runs: RunRow[];
  steps: RunStepRow[];
  events: NewRunEvent[];
}

/**
 * What a transition may change in a run row; the rest (its plan and definition, input, event,
 * parent, creator, start) is written once, when the run is inserted. A definition is kilobytes
 * for a long plan, and SQLite rewrites every byte of a column it is told to set.
 */
const RUN_STATE_TEMPLATE: Record<RunStateColumn, null> = {
  status: null,
  blocked_by: null,
  admitted_at: null,
  output: null,
  output_ref: null,
  error: null,
  revisions: null,
  wake_at: null,
  revision: null,
  completed_at: null,
  updated_at: null,
};
const RUN_STATE_COLUMNS = Object.keys(RUN_STATE_TEMPLATE) as RunStateColumn[];
/** PostgreSQL types of the run columns a transition writes (see saveInOneStatement). */
const RUN_STATE_TYPES: Record<RunStateColumn | 'id', 'text' | 'bigint'> = {
  id: 'text',
  status: 'text',
  blocked_by: 'text',
  admitted_at: 'bigint',
  output: 'text',
  output_ref: 'text',
  error: 'text',
  revisions: 'text',
  wake_at: 'bigint',
  revision: 'text',
  completed_at: 'bigint',
  updated_at: 'bigint',
};
/** What a transition may change in a step row (everything but its identity and place). */
const STEP_STATE_COLUMNS = [
  'status',
  'attempt',
  'agent_id',
  'capability',
  'message_id',
  'child_run_id',
  'input',
  'input_ref',
  'output',
  'output_ref',
  'error',
  'wake_at',
  'wait_topic',
  'detail',
  'started_at',
  'completed_at',
] as const;

/**
 * Runs with their steps, timeline events, tags and metadata (with RunListStore, the only SQL of the
 * runs, run_steps, run_events, run_tags and run_metadata tables): what the engine loads and saves.
 * What callers list is RunListStore (run-list-store.ts).
 */
export class RunStore extends RunListStore {
  /** Statements run on every transition or start, compiled once per shape. */
  private readonly statements: Statements;
  private readonly runInsert: BulkInsert<'runs', keyof RunRow>;
  private readonly stepInsert: BulkInsert<'run_steps', keyof RunStepRow>;
  private readonly eventInsert: BulkInsert<'run_events', keyof NewRunEvent>;
  /** New and changed steps of a transition: an upsert on the step key. */
  private readonly stepUpsert: BulkInsert<'run_steps', keyof RunStepRow>;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    // One text per count of runs, steps and events in the one-statement saves: room for the
    // shapes a busy engine meets.
    this.statements = new Statements(db, { size: 1024 });
    this.runInsert = new BulkInsert(db, 'runs', RUN_TEMPLATE);
    this.stepInsert = new BulkInsert(db, 'run_steps', STEP_TEMPLATE);
    this.eventInsert = new BulkInsert(db, 'run_events', EVENT_TEMPLATE);
    this.stepUpsert = new BulkInsert(db, 'run_steps', STEP_TEMPLATE, { clauses: (insert) => upsertSteps(insert) });
  }

  /**
   * Inserts new runs, their steps and their timeline events: one statement per table (per
   * chunk), or on PostgreSQL one statement in all when they fit one.
   */
  async insertRuns(tx: Tx, { runs, steps, events }: NewRuns): Promise<void> {
    const bound = runs.length * RUN_COLUMNS.length + steps.length * STEP_COLUMNS.length + events.length * EVENT_COLUMNS.length;
    if (this.caps.writableCte && runs.length > 0 && steps.length > 0 && events.length > 0 && bound <= MAX_CTE_BOUND) {
      const query = this.statements.listed(
        `new-runs:${runs.length}:${steps.length}:${events.length}`,
        { runs, steps, events },
        (v) =>
          this.db
            .with('r', (db) => db.insertInto('runs').values(v.runs).returning('id'))
            .with('s', (db) => db.insertInto('run_steps').values(v.steps).returning('step_id'))
            .insertInto('run_events')
            .values(v.events),
        { runs: RUN_COLUMNS, steps: STEP_COLUMNS, events: EVENT_COLUMNS },
      );
      await dbOf(tx, this.db).executeQuery(query);
      return;
    }
    await atomically(tx, this.db, async (trx) => {
      await this.runInsert.run(trx, runs);
      await this.stepInsert.run(trx, steps);
      await this.eventInsert.run(trx, events);
    });
  }

  /** A run for reading, or with `lock` for advancing: locked on PostgreSQL until `tx` ends. */
  async findRun(tx: Tx, id: string, options: { lock?: boolean } = {}): Promise<RunRow | undefined> {
    const lock = options.lock === true;
    const query = this.statements.compiled(`run:${lock}`, { id }, (v) =>
      this.lockIf(options, this.db.selectFrom('runs').selectAll().where('id', '=', v.id)),
    );
    return (await dbOf(tx, this.db).executeQuery(query)).rows[0];
  }

  /** Several runs in id order; with `lock`, for advancing: on PostgreSQL locked in that order (no deadlock between batches). */
  async findRuns(tx: Tx, ids: string[], options: { lock?: boolean } = {}): Promise<RunRow[]> {
    const lock = options.lock === true;
    const query = this.statements.listed(`runs:${ids.length}:${lock}`, { ids }, (v) =>
      this.lockIf(options, this.db.selectFrom('runs').selectAll().where('id', 'in', v.ids).orderBy('id')),
    );
    return (await dbOf(tx, this.db).executeQuery(query)).rows;
  }

  async runSteps(tx: Tx, runId: string): Promise<RunStepRow[]> {
    return dbOf(tx, this.db)
      .selectFrom('run_steps')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('position')
      .orderBy('item_index')
      .execute();
  }

  /** What a run is found by: the tags and the metadata it was started with. */
  async insertRunLabels(tx: Tx, runId: string, labels: RunLabels): Promise<void> {
    const db = dbOf(tx, this.db);
    if (labels.tags.length > 0)
      await db
        .insertInto('run_tags')
        .values(labels.tags.map((tag) => ({ tag, run_id: runId })))
        .execute();
    const metadata = Object.entries(labels.metadata);
    if (metadata.length > 0)
      await db
        .insertInto('run_metadata')
        .values(metadata.map(([key, value]) => ({ run_id: runId, key, value })))
        .execute();
  }

  /** The steps of several runs in one query (a page of runs), grouped by run. */
  async stepsOfRuns(tx: Tx, runIds: string[]): Promise<Map<string, RunStepRow[]>> {
    const byRun = new Map<string, RunStepRow[]>(runIds.map((id) => [id, []]));
    if (runIds.length === 0) return byRun;
    const rows = await dbOf(tx, this.db)
      .selectFrom('run_steps')
      .selectAll()
      .where('run_id', 'in', runIds)
      .orderBy('run_id')
      .orderBy('position')
      .orderBy('item_index')
      .execute();
    for (const row of rows) byRun.get(row.run_id)!.push(row);
    return byRun;
  }

  /**
   * Saves transitions of existing runs: each run's row (the columns a transition changes), its
   * new and changed steps (an upsert on the step key) and its timeline events. On PostgreSQL a
   * batch (a batch acknowledgement moves one run per message) is one statement, as long as it
   * fits one; elsewhere one statement per run row plus one per table for steps and events.
   * Every statement is compiled once per shape.
   */
  async saveTransitions(tx: Tx, transitions: Transition[]): Promise<void> {
    await atomically(tx, this.db, (trx) => this.saveChunked(trx, transitions));
  }

  private async saveChunked(trx: Db, transitions: Transition[]): Promise<void> {
    if (!this.caps.writableCte) return this.saveStatementEach(trx, transitions);
    let chunk: Transition[] = [];
    let bound = 0;
    for (const transition of transitions) {
      const size =
        1 + RUN_STATE_COLUMNS.length + transition.steps.length * STEP_COLUMNS.length + transition.events.length * EVENT_COLUMNS.length;
      if (size > MAX_CTE_BOUND) {
        await this.saveStatementEach(trx, [transition]);
        continue;
      }
      if (bound + size > MAX_CTE_BOUND) {
        await this.saveInOneStatement(trx, chunk);
        chunk = [];
        bound = 0;
      }
      chunk.push(transition);
      bound += size;
    }
    if (chunk.length > 0) await this.saveInOneStatement(trx, chunk);
  }

  private async saveStatementEach(trx: Db, transitions: Transition[]): Promise<void> {
    for (const { run } of transitions) {
      const query = this.statements.compiled('update-run', pick(run, ['id', ...RUN_STATE_COLUMNS]), (v) =>
        this.db.updateTable('runs').set(pick(v, RUN_STATE_COLUMNS)).where('id', '=', v.id),
      );
      await trx.executeQuery(query);
    }
    await this.stepUpsert.run(
      trx,
      transitions.flatMap((t) => t.steps),
    );
    await this.eventInsert.run(
      trx,
      transitions.flatMap((t) => t.events),
    );
  }

  /**
   * PostgreSQL: the steps' upsert and the events' insert as writable CTEs of an UPDATE of the
   * runs from a VALUES list (typed by casts: a bound parameter alone has no type).
   */
  private async saveInOneStatement(trx: Db, transitions: Transition[]): Promise<void> {
    const steps = transitions.flatMap((t) => t.steps);
    const events = transitions.flatMap((t) => t.events);
    const runs = transitions.map((t) => t.run);
    const query = this.statements.listed(
      `transitions:${runs.length}:${steps.length}:${events.length}`,
      { runs, steps, events },
      (v) => {
        const columns = ['id', ...RUN_STATE_COLUMNS] as const;
        const rows = v.runs.map((run) => sql`(${sql.join(columns.map((c) => sql`${run[c]}::${sql.raw(RUN_STATE_TYPES[c])}`))})`);
        const values = sql`(values ${sql.join(rows)})`.as(sql`v(${sql.join(columns.map((c) => sql.ref(c)))})`);
        const { db } = this;
        let query: QueryCreator<Database> = db;
        if (v.steps.length > 0) {
          query = query.with('saved_steps', (db) => upsertSteps(db.insertInto('run_steps').values(v.steps)).returning('step_id')) as never;
        }
        if (v.events.length > 0) {
          query = query.with('saved_events', (db) => db.insertInto('run_events').values(v.events).returning('seq')) as never;
        }
        return query
          .updateTable('runs')
          .from(values as never)
          .set(Object.fromEntries(RUN_STATE_COLUMNS.map((c) => [c, sql.ref(`v.${c}`)])) as never)
          .where(sql<boolean>`${sql.ref('runs.id')} = ${sql.ref('v.id')}`);
      },
      { runs: ['id', ...RUN_STATE_COLUMNS], steps: STEP_COLUMNS, events: EVENT_COLUMNS },
    );
    await trx.executeQuery(query);
  }

  /**
   * Claims up to `limit` active runs whose timer is due; on PostgreSQL they stay locked (SKIP
   * LOCKED) until the transaction ends, so another node advances different ones.
   */
  async claimDueRuns(tx: Tx, now: number, limit: number): Promise<RunRow[]> {
    const query = dbOf(tx, this.db)
      .selectFrom('runs')
      .selectAll()
      .where('wake_at', '<=', now)
      .where('status', 'in', [...ACTIVE, 'queued'])
      .orderBy('wake_at')
      .limit(limit);
    return this.caps.claim(query).execute();
  }

  /** The earliest timer of any run (finished runs have none, so the wake_at index answers alone). */
  async nextWakeAt(tx: Tx): Promise<number | null> {
    const row = await dbOf(tx, this.db)
      .selectFrom('runs')
      .select((eb) => eb.fn.min('wake_at').as('next'))
      .where('wake_at', 'is not', null)
      .executeTakeFirst();
    return nextDue(row);
  }

  /** Agent steps waiting for an agent with their capability (the only waiting steps with a capability). */
  async agentWaiters(tx: Tx): Promise<{ run_id: string; step_id: string }[]> {
    return dbOf(tx, this.db)
      .selectFrom('run_steps')
      .select(['run_id', 'step_id'])
      .where('status', '=', 'waiting')
      .where('capability', 'is not', null)
      .execute();
  }

  /**
   * Runs with a step waiting for a published event (filtered by topic pattern by the caller).
   * Every publish asks, so the query is compiled once, and `wait_topic >= ''` (every text is)
   * rather than `is not null` lets SQLite search the wait_topic index, which holds a few
   * waiting steps among all steps, instead of scanning the table.
   */
  async eventWaiters(tx: Tx): Promise<{ run_id: string; step_id: string; wait_topic: string }[]> {
    const query = this.statements.compiled('waiters', {}, () =>
      this.db
        .selectFrom('run_steps')
        .select(['run_id', 'step_id', 'wait_topic'])
        .where('wait_topic', '>=', sql.lit(''))
        .where('status', '=', sql.lit('running')),
    );
    // wait_topic >= '' holds no NULL.
    return (await dbOf(tx, this.db).executeQuery(query)).rows as { run_id: string; step_id: string; wait_topic: string }[];
  }
}

const RUN_COLUMNS = Object.keys(RUN_TEMPLATE) as (keyof RunRow)[];
const STEP_COLUMNS = Object.keys(STEP_TEMPLATE) as (keyof RunStepRow)[];
const EVENT_COLUMNS = Object.keys(EVENT_TEMPLATE) as (keyof NewRunEvent)[];

/** The fields of `row` named by `columns`. */
function pick<Row, C extends keyof Row>(row: Row, columns: readonly C[]): Pick<Row, C> {
  const picked = {} as Pick<Row, C>;
  for (const column of columns) picked[column] = row[column];
  return picked;
}

/** A transition's new and changed steps: an upsert on the step key. */
function upsertSteps<O>(insert: InsertQueryBuilder<Database, 'run_steps', O>) {
  return insert.onConflict((oc) =>
    oc.columns(['run_id', 'step_id']).doUpdateSet((eb) => {
      const set: Record<string, unknown> = {};
      for (const column of STEP_STATE_COLUMNS) set[column] = eb.ref(`excluded.${column}`);
      return set as never;
    }),
  );
}
