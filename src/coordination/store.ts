import { sql, type Insertable, type InsertQueryBuilder, type QueryCreator, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../db/database.js';
import { nextDue, type DialectCapabilities } from '../db/capabilities.js';
import type { Database } from '../db/schema.js';
import { BulkInsert } from '../db/bulk-insert.js';
import { paginate } from '../db/paginate.js';
import { Statements } from '../db/statements.js';
import { atomically, dbOf, inTransaction, type Tx } from '../db/tx.js';
import { Store } from '../db/store.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { PlanDefinition } from './plan-definition.js';
import type { RunStatus, PlansTable, PlanVersionsTable, RunsTable, RunStepsTable, RunEventsTable, PlanTriggersTable, TriggerFiresTable } from './tables.js';

/** A waiting human step, as the approvals inbox lists it. */
/** Which runs a list shows: times in ms, `startedAfter` inclusive and `startedBefore` exclusive. */
export interface RunFilter {
  planId?: string;
  status?: RunStatus;
  startedAfter?: number;
  startedBefore?: number;
  tag?: string;
}

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
export type PlanRow = Selectable<PlansTable>;
export type PlanVersionRow = Selectable<PlanVersionsTable>;
export type RunRow = Selectable<RunsTable>;
export type RunStepRow = Selectable<RunStepsTable>;
export type RunEventRow = Selectable<RunEventsTable>;
export type NewRunEvent = Omit<Insertable<RunEventsTable>, 'seq'>;
export type TriggerRow = Selectable<PlanTriggersTable>;
/** A trigger as read: with the time of its latest started run, from the fire ledger. */
export type TriggerView = TriggerRow & { last_fired_at: number | null };
export type FireRow = Selectable<TriggerFiresTable>;

/** Fires kept per trigger (older ones are pruned by the timer worker). */
export const FIRES_KEPT = 100;

const ACTIVE: RunStatus[] = ['running', 'waiting'];
type RunStateColumn = 'status' | 'output' | 'error' | 'revisions' | 'wake_at' | 'revision' | 'completed_at' | 'updated_at';

// Every column of the rows inserted on hot paths (a run started, its steps and timeline, a fire),
// each null: typed as full records, so a column added to a table cannot be left out.
const RUN_TEMPLATE: Record<keyof RunRow, null> = {
  id: null, plan_id: null, plan_version: null, definition: null, status: null, input: null, event: null, output: null,
  error: null, adaptive: null, revisions: null, parent_run_id: null, parent_step_id: null, depth: null, created_by: null,
  wake_at: null, revision: null, started_at: null, completed_at: null, updated_at: null, traceparent: null,
};
const STEP_TEMPLATE: Record<keyof RunStepRow, null> = {
  run_id: null, step_id: null, position: null, parent_step_id: null, item_index: null, item: null, status: null, attempt: null,
  agent_id: null, capability: null, message_id: null, child_run_id: null, input: null, output: null, error: null, wake_at: null,
  wait_topic: null, detail: null, started_at: null, completed_at: null,
};
const EVENT_TEMPLATE: Record<keyof NewRunEvent, null> = { run_id: null, step_id: null, type: null, detail: null, created_at: null };
const FIRE_TEMPLATE: Record<keyof FireRow, null> = {
  id: null, trigger_id: null, scheduled_for: null, outcome: null, reason: null, run_id: null, created_at: null,
};
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
  status: null, output: null, error: null, revisions: null, wake_at: null, revision: null, completed_at: null, updated_at: null,
};
const RUN_STATE_COLUMNS = Object.keys(RUN_STATE_TEMPLATE) as RunStateColumn[];
/** PostgreSQL types of the run columns a transition writes (see saveInOneStatement). */
const RUN_STATE_TYPES: Record<RunStateColumn | 'id', 'text' | 'bigint'> = {
  id: 'text', status: 'text', output: 'text', error: 'text', revisions: 'text', wake_at: 'bigint', revision: 'text', completed_at: 'bigint', updated_at: 'bigint',
};
/** What a transition may change in a step row (everything but its identity and place). */
const STEP_STATE_COLUMNS = [
  'status', 'attempt', 'agent_id', 'capability', 'message_id', 'child_run_id', 'input', 'output', 'error',
  'wake_at', 'wait_topic', 'detail', 'started_at', 'completed_at',
] as const;

export class CoordinationStore extends Store {
  private readonly definitions = new BoundedMap<string, { definition: PlanDefinition; text: string }>(500);
  /** Statements run on every transition or start, compiled once per shape. */
  private readonly statements: Statements;
  private readonly runInsert: BulkInsert<'runs', keyof RunRow>;
  private readonly stepInsert: BulkInsert<'run_steps', keyof RunStepRow>;
  private readonly eventInsert: BulkInsert<'run_events', keyof NewRunEvent>;
  /** New and changed steps of a transition: an upsert on the step key. */
  private readonly stepUpsert: BulkInsert<'run_steps', keyof RunStepRow>;
  /** A schedule slot already in the ledger is left out (ON CONFLICT DO NOTHING). */
  private readonly fireInsert: BulkInsert<'trigger_fires', keyof FireRow>;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    // One text per count of runs, steps and events in the one-statement saves: room for the
    // shapes a busy engine meets.
    this.statements = new Statements(db, { size: 1024 });
    this.runInsert = new BulkInsert(db, 'runs', RUN_TEMPLATE);
    this.stepInsert = new BulkInsert(db, 'run_steps', STEP_TEMPLATE);
    this.eventInsert = new BulkInsert(db, 'run_events', EVENT_TEMPLATE);
    this.stepUpsert = new BulkInsert(db, 'run_steps', STEP_TEMPLATE, { clauses: (insert) => upsertSteps(insert) });
    this.fireInsert = new BulkInsert(db, 'trigger_fires', FIRE_TEMPLATE, {
      clauses: (insert) => insert.onConflict((oc) => oc.columns(['trigger_id', 'scheduled_for']).doNothing()).returning('id'),
    });
  }

  /**
   * Runs `work` in a transaction, again (up to 3 times) when PostgreSQL aborts it to break a
   * deadlock: a cancel or a timer locks a run and then its message, an acknowledgement the reverse.
   */
  override async inTransaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await inTransaction(this.db, work);
      } catch (err) {
        if (attempt >= 3 || !this.caps.isTransientConflict(err)) throw err;
      }
    }
  }

  /** `query`, locked (PostgreSQL `FOR UPDATE`) with `lock`: the read of a row about to be updated. */
  private lockIf<TB extends keyof Database, O>(options: { lock?: boolean }, query: SelectQueryBuilder<Database, TB, O>): SelectQueryBuilder<Database, TB, O> {
    return options.lock === true ? this.caps.lock(query) : query;
  }

  isUniqueViolation(err: unknown): boolean {
    return this.caps.isUniqueViolation(err);
  }

  // Plans

  async insertPlan(tx: Tx, plan: PlanRow, version: PlanVersionRow): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      await trx.insertInto('plans').values(plan).execute();
      await trx.insertInto('plan_versions').values(version).execute();
    });
  }

  async updatePlan(tx: Tx, id: string, changes: Pick<PlanRow, 'alias' | 'version' | 'updated_at'>, version: PlanVersionRow): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      await trx.updateTable('plans').set(changes).where('id', '=', id).execute();
      await trx.insertInto('plan_versions').values(version).execute();
    });
  }

  /** A plan by id or alias; with `lock`, locked on PostgreSQL until `tx` ends (read for an update). */
  async findPlan(tx: Tx, idOrAlias: string, options: { lock?: boolean } = {}): Promise<PlanRow | undefined> {
    const lock = options.lock === true;
    const query = this.statements.compiled(`plan:${lock}`, { idOrAlias }, (v) =>
      this.lockIf(
        options,
        this.db
          .selectFrom('plans')
          .selectAll()
          .where((eb) => eb.or([eb('id', '=', v.idOrAlias), eb('alias', '=', v.idOrAlias)])),
      ),
    );
    return (await dbOf(tx, this.db).executeQuery(query)).rows[0];
  }

  async findVersion(tx: Tx, planId: string, version: number): Promise<PlanVersionRow | undefined> {
    return dbOf(tx, this.db).selectFrom('plan_versions').selectAll().where('plan_id', '=', planId).where('version', '=', version).executeTakeFirst();
  }

  /**
   * The newest version of a plan by id or alias (what a new run pins), with its definition
   * parsed and as stored (the text a run copies).
   */
  async currentPlan(tx: Tx, idOrAlias: string): Promise<{ id: string; alias: string; version: number; definition: PlanDefinition; text: string } | null> {
    const plan = await this.findPlan(tx, idOrAlias);
    if (!plan) return null;
    // A version never changes once written, so its parsed definition can be kept.
    const key = `${plan.id}@${plan.version}`;
    let kept = this.definitions.get(key);
    if (!kept) {
      const text = (await this.findVersion(tx, plan.id, plan.version))!.definition;
      kept = { definition: JSON.parse(text) as PlanDefinition, text };
      this.definitions.set(key, kept);
    }
    return { id: plan.id, alias: plan.alias, version: plan.version, ...kept };
  }

  async listPlans(tx: Tx, window: Page): Promise<Paged<PlanRow>> {
    return paginate(dbOf(tx, this.db).selectFrom('plans').selectAll().orderBy('id'), window);
  }

  async deletePlan(tx: Tx, id: string): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      const triggers = trx.selectFrom('plan_triggers').select('id').where('plan_id', '=', id);
      await trx.deleteFrom('trigger_fires').where('trigger_id', 'in', triggers).execute();
      await trx.deleteFrom('plan_triggers').where('plan_id', '=', id).execute();
      await trx.deleteFrom('plan_versions').where('plan_id', '=', id).execute();
      await trx.deleteFrom('plans').where('id', '=', id).execute();
    });
  }

  // Runs

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
    const query = this.statements.compiled(`run:${lock}`, { id }, (v) => this.lockIf(options, this.db.selectFrom('runs').selectAll().where('id', '=', v.id)));
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
    return dbOf(tx, this.db).selectFrom('run_steps').selectAll().where('run_id', '=', runId).orderBy('position').orderBy('item_index').execute();
  }

  async insertRunTags(tx: Tx, runId: string, tags: readonly string[]): Promise<void> {
    if (tags.length === 0) return;
    await dbOf(tx, this.db)
      .insertInto('run_tags')
      .values(tags.map((tag) => ({ tag, run_id: runId })))
      .execute();
  }

  /** The tags of several runs in one query, by run, each run's in name order. */
  async tagsOfRuns(tx: Tx, runIds: string[]): Promise<Map<string, string[]>> {
    const byRun = new Map<string, string[]>(runIds.map((id) => [id, []]));
    if (runIds.length === 0) return byRun;
    const rows = await dbOf(tx, this.db).selectFrom('run_tags').select(['run_id', 'tag']).where('run_id', 'in', runIds).orderBy('run_id').orderBy('tag').execute();
    for (const row of rows) byRun.get(row.run_id)!.push(row.tag);
    return byRun;
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

  async listRuns(tx: Tx, filter: RunFilter, window: Page): Promise<Paged<RunRow>> {
    let query = dbOf(tx, this.db).selectFrom('runs').selectAll().orderBy('id', 'desc');
    if (filter.planId !== undefined) query = query.where('plan_id', '=', filter.planId);
    if (filter.status !== undefined) query = query.where('status', '=', filter.status);
    if (filter.startedAfter !== undefined) query = query.where('started_at', '>=', filter.startedAfter);
    if (filter.startedBefore !== undefined) query = query.where('started_at', '<', filter.startedBefore);
    if (filter.tag !== undefined) {
      const tag = filter.tag;
      query = query.where('id', 'in', (eb) => eb.selectFrom('run_tags').select('run_id').where('tag', '=', tag));
    }
    return paginate(query, window);
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
    return paginate(query, window);
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
      const size = (1 + RUN_STATE_COLUMNS.length) + transition.steps.length * STEP_COLUMNS.length + transition.events.length * EVENT_COLUMNS.length;
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
    await this.stepUpsert.run(trx, transitions.flatMap((t) => t.steps));
    await this.eventInsert.run(trx, transitions.flatMap((t) => t.events));
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
      .where('status', 'in', ACTIVE)
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

  async listEvents(tx: Tx, runId: string, window: Page): Promise<Paged<RunEventRow>> {
    return paginate(dbOf(tx, this.db).selectFrom('run_events').selectAll().where('run_id', '=', runId).orderBy('seq'), window);
  }

  // Triggers

  async insertTrigger(tx: Tx, row: TriggerRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('plan_triggers').values(row).execute();
  }

  private triggerView(db: Db) {
    return db
      .selectFrom('plan_triggers')
      .selectAll('plan_triggers')
      .select((eb) =>
        eb
          .selectFrom('trigger_fires')
          .select((f) => f.fn.max('trigger_fires.created_at').as('at'))
          .whereRef('trigger_fires.trigger_id', '=', 'plan_triggers.id')
          .where('trigger_fires.outcome', '=', 'started')
          .as('last_fired_at'),
      );
  }

  async findTrigger(tx: Tx, id: string): Promise<TriggerView | undefined> {
    const row = await this.triggerView(dbOf(tx, this.db)).where('plan_triggers.id', '=', id).executeTakeFirst();
    return row && { ...row, last_fired_at: row.last_fired_at === null ? null : Number(row.last_fired_at) };
  }

  async findTriggerByPath(tx: Tx, path: string): Promise<TriggerRow | undefined> {
    return dbOf(tx, this.db).selectFrom('plan_triggers').selectAll().where('webhook_path', '=', path).executeTakeFirst();
  }

  async listTriggers(tx: Tx, planId: string | undefined, window: Page): Promise<Paged<TriggerView>> {
    let query = this.triggerView(dbOf(tx, this.db)).orderBy('plan_triggers.id');
    if (planId !== undefined) query = query.where('plan_triggers.plan_id', '=', planId);
    const page = await paginate(query, window);
    return { items: page.items.map((row) => ({ ...row, last_fired_at: row.last_fired_at === null ? null : Number(row.last_fired_at) })), total: page.total };
  }

  async updateTrigger(tx: Tx, id: string, changes: Partial<TriggerRow>): Promise<void> {
    await dbOf(tx, this.db).updateTable('plan_triggers').set(changes).where('id', '=', id).execute();
  }

  async deleteTrigger(tx: Tx, id: string): Promise<boolean> {
    return atomically(tx, this.db, async (trx) => {
      await trx.deleteFrom('trigger_fires').where('trigger_id', '=', id).execute();
      const result = await trx.deleteFrom('plan_triggers').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  /** Enabled event triggers (few; the caller matches their topic patterns). */
  async eventTriggers(tx: Tx): Promise<TriggerRow[]> {
    return dbOf(tx, this.db).selectFrom('plan_triggers').selectAll().where('type', '=', 'event').where('enabled', '=', 1).execute();
  }

  /** Claims enabled schedule triggers that are due (SKIP LOCKED on PostgreSQL, like routines). */
  async claimDueSchedules(tx: Tx, now: number, limit: number): Promise<TriggerRow[]> {
    const query = dbOf(tx, this.db)
      .selectFrom('plan_triggers')
      .selectAll()
      .where('type', '=', 'schedule')
      .where('enabled', '=', 1)
      .where('next_fire_at', '<=', now)
      .orderBy('next_fire_at')
      .limit(limit);
    return this.caps.claim(query).execute();
  }

  async nextScheduleAt(tx: Tx): Promise<number | null> {
    const row = await dbOf(tx, this.db)
      .selectFrom('plan_triggers')
      .select((eb) => eb.fn.min('next_fire_at').as('next'))
      .where('type', '=', 'schedule')
      .where('enabled', '=', 1)
      .executeTakeFirst();
    return nextDue(row);
  }

  /** Records fires; a schedule slot already in the ledger is left out of the result. */
  async insertFires(tx: Tx, rows: FireRow[]): Promise<FireRow[]> {
    if (rows.length === 0) return [];
    const ids = new Set((await this.fireInsert.run<{ id: string }>(dbOf(tx, this.db), rows)).map((r) => r.id));
    return rows.filter((r) => ids.has(r.id));
  }

  /** Records fires that no other can conflict with (events and webhooks: no schedule slot). */
  async insertEventFires(tx: Tx, rows: FireRow[]): Promise<void> {
    await this.fireInsert.run(dbOf(tx, this.db), rows);
  }

  async updateFire(tx: Tx, id: string, changes: Partial<FireRow>): Promise<void> {
    await dbOf(tx, this.db).updateTable('trigger_fires').set(changes).where('id', '=', id).execute();
  }

  async listFires(tx: Tx, triggerId: string, window: Page): Promise<Paged<FireRow>> {
    return paginate(dbOf(tx, this.db).selectFrom('trigger_fires').selectAll().where('trigger_id', '=', triggerId).orderBy('id', 'desc'), window);
  }

  /** Keeps the newest FIRES_KEPT fires of every trigger. */
  async pruneFires(tx: Tx): Promise<void> {
    const db = dbOf(tx, this.db);
    const ranked = db
      .selectFrom('trigger_fires')
      .select(['id', (eb) => eb.fn.agg<number>('row_number').over((ob) => ob.partitionBy('trigger_id').orderBy('id', 'desc')).as('rank')])
      .as('ranked');
    const stale = db.selectFrom(ranked).select('ranked.id').where('ranked.rank', '>', FIRES_KEPT);
    await db.deleteFrom('trigger_fires').where('id', 'in', stale).execute();
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
      if (list.length < sample && row.started_at !== null && row.completed_at !== null) list.push(Number(row.completed_at) - Number(row.started_at));
    }
    return durations;
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
