import { CompiledQuery, sql, type Insertable, type QueryCreator, type Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Database } from '../db/schema.js';
import { BulkInsert } from '../db/bulk-insert.js';
import { paginate } from '../db/paginate.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { PlanDefinition } from './plan.js';
import type { RunStatus, PlansTable, PlanVersionsTable, RunsTable, RunStepsTable, RunEventsTable, PlanTriggersTable, TriggerFiresTable } from './tables.js';

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
  wake_at: null, revision: null, started_at: null, completed_at: null, updated_at: null,
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

export class CoordinationStore {
  private readonly definitions = new BoundedMap<string, { definition: PlanDefinition; text: string }>(500);
  private readonly runInsert = new BulkInsert<RunRow>(RUN_TEMPLATE, (trx, rows) => trx.insertInto('runs').values(rows).compile());
  private readonly stepInsert = new BulkInsert<RunStepRow>(STEP_TEMPLATE, (trx, rows) => trx.insertInto('run_steps').values(rows).compile());
  private readonly eventInsert = new BulkInsert<NewRunEvent>(EVENT_TEMPLATE, (trx, rows) => trx.insertInto('run_events').values(rows).compile());
  private readonly fireInsert = new BulkInsert<FireRow>(FIRE_TEMPLATE, (trx, rows) => trx.insertInto('trigger_fires').values(rows).compile());
  /** Texts of queries run on every transition or start, compiled once (by name). */
  private readonly texts = new Map<string, string>();

  private compiled(name: string, compile: () => string): string {
    let text = this.texts.get(name);
    if (text === undefined) this.texts.set(name, (text = compile()));
    return text;
  }

  /** New and changed steps of a transition: an upsert on the step key. */
  private readonly stepUpsert = new BulkInsert<RunStepRow>(STEP_TEMPLATE, (trx, rows) => this.upsertSteps(trx, rows).compile());
  /** The PostgreSQL insert of new runs, steps and events in one statement, by row counts. */
  private readonly newRunsTexts = new BoundedMap<string, string>(200);
  /** The PostgreSQL save of transitions in one statement, by run, step and event counts. */
  private readonly transitionTexts = new BoundedMap<string, string>(200);

  constructor(
    private readonly db: Db,
    private readonly caps: DialectCapabilities,
  ) {}

  /**
   * Runs `work` in a transaction, again (up to 3 times) when PostgreSQL aborts it to break a
   * deadlock: a cancel or a timer locks a run and then its message, an acknowledgement the reverse.
   */
  async transaction<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.transaction().execute(work);
      } catch (err) {
        if (attempt >= 3 || !this.caps.isTransientConflict(err)) throw err;
      }
    }
  }

  isUniqueViolation(err: unknown): boolean {
    return this.caps.isUniqueViolation(err);
  }

  // Plans

  async insertPlan(trx: Db, plan: PlanRow, version: PlanVersionRow): Promise<void> {
    await trx.insertInto('plans').values(plan).execute();
    await trx.insertInto('plan_versions').values(version).execute();
  }

  async updatePlan(trx: Db, id: string, changes: Pick<PlanRow, 'alias' | 'version' | 'updated_at'>, version: PlanVersionRow): Promise<void> {
    await trx.updateTable('plans').set(changes).where('id', '=', id).execute();
    await trx.insertInto('plan_versions').values(version).execute();
  }

  /** A plan by id or alias, locked on PostgreSQL when read inside a transaction for an update. */
  async findPlan(idOrAlias: string, trx: Db = this.db, forUpdate = false): Promise<PlanRow | undefined> {
    const lock = forUpdate && this.caps.skipLocked;
    const text = this.compiled(`plan${lock ? ':lock' : ''}`, () => {
      const query = trx
        .selectFrom('plans')
        .selectAll()
        .where((eb) => eb.or([eb('id', '=', ''), eb('alias', '=', '')]));
      return (lock ? query.forUpdate() : query).compile().sql;
    });
    return (await trx.executeQuery<PlanRow>(CompiledQuery.raw(text, [idOrAlias, idOrAlias]))).rows[0];
  }

  async findVersion(planId: string, version: number, trx: Db = this.db): Promise<PlanVersionRow | undefined> {
    return trx.selectFrom('plan_versions').selectAll().where('plan_id', '=', planId).where('version', '=', version).executeTakeFirst();
  }

  /**
   * The newest version of a plan by id or alias (what a new run pins), with its definition
   * parsed and as stored (the text a run copies).
   */
  async currentPlan(trx: Db, idOrAlias: string): Promise<{ id: string; version: number; definition: PlanDefinition; text: string } | null> {
    const plan = await this.findPlan(idOrAlias, trx);
    if (!plan) return null;
    // A version never changes once written, so its parsed definition can be kept.
    const key = `${plan.id}@${plan.version}`;
    let kept = this.definitions.get(key);
    if (!kept) {
      const text = (await this.findVersion(plan.id, plan.version, trx))!.definition;
      kept = { definition: JSON.parse(text) as PlanDefinition, text };
      this.definitions.set(key, kept);
    }
    return { id: plan.id, version: plan.version, ...kept };
  }

  async listPlans(window: Page): Promise<Paged<PlanRow>> {
    return paginate(this.db.selectFrom('plans').selectAll().orderBy('id'), window);
  }

  async deletePlan(trx: Db, id: string): Promise<void> {
    const triggers = trx.selectFrom('plan_triggers').select('id').where('plan_id', '=', id);
    await trx.deleteFrom('trigger_fires').where('trigger_id', 'in', triggers).execute();
    await trx.deleteFrom('plan_triggers').where('plan_id', '=', id).execute();
    await trx.deleteFrom('plan_versions').where('plan_id', '=', id).execute();
    await trx.deleteFrom('plans').where('id', '=', id).execute();
  }

  // Runs

  /**
   * Inserts new runs, their steps and their timeline events: one statement per table (per
   * chunk), or on PostgreSQL one statement in all when they fit one.
   */
  async insertRuns(trx: Db, { runs, steps, events }: NewRuns): Promise<void> {
    const bound = runs.length * RUN_COLUMNS.length + steps.length * STEP_COLUMNS.length + events.length * EVENT_COLUMNS.length;
    if (this.caps.writableCte && runs.length > 0 && steps.length > 0 && events.length > 0 && bound <= MAX_CTE_BOUND) {
      const key = `${runs.length}:${steps.length}:${events.length}`;
      let text = this.newRunsTexts.get(key);
      if (text === undefined) {
        text = trx
          .with('r', (db) => db.insertInto('runs').values(nulls<RunRow>(RUN_TEMPLATE, runs.length)).returning('id'))
          .with('s', (db) => db.insertInto('run_steps').values(nulls<RunStepRow>(STEP_TEMPLATE, steps.length)).returning('step_id'))
          .insertInto('run_events')
          .values(nulls<NewRunEvent>(EVENT_TEMPLATE, events.length))
          .compile().sql;
        this.newRunsTexts.set(key, text);
      }
      const params: unknown[] = [];
      bind(params, RUN_COLUMNS, runs);
      bind(params, STEP_COLUMNS, steps);
      bind(params, EVENT_COLUMNS, events);
      await trx.executeQuery(CompiledQuery.raw(text, params));
      return;
    }
    await this.runInsert.run(trx, runs);
    await this.stepInsert.run(trx, steps);
    await this.eventInsert.run(trx, events);
  }

  /** A run for reading, or (in a transaction) for advancing: locked on PostgreSQL until commit. */
  async findRun(id: string, trx: Db = this.db, forUpdate = false): Promise<RunRow | undefined> {
    const lock = forUpdate && this.caps.skipLocked;
    const text = this.compiled(`run${lock ? ':lock' : ''}`, () => {
      const query = trx.selectFrom('runs').selectAll().where('id', '=', '');
      return (lock ? query.forUpdate() : query).compile().sql;
    });
    return (await trx.executeQuery<RunRow>(CompiledQuery.raw(text, [id]))).rows[0];
  }

  /** Several runs for advancing, in id order: on PostgreSQL locked in that order (no deadlock between batches). */
  async findRuns(ids: string[], trx: Db, forUpdate = false): Promise<RunRow[]> {
    const query = trx.selectFrom('runs').selectAll().where('id', 'in', ids).orderBy('id');
    return (forUpdate && this.caps.skipLocked ? query.forUpdate() : query).execute();
  }

  async runSteps(runId: string, trx: Db = this.db): Promise<RunStepRow[]> {
    return trx.selectFrom('run_steps').selectAll().where('run_id', '=', runId).orderBy('position').orderBy('item_index').execute();
  }

  /** The steps of several runs in one query (a page of runs), grouped by run. */
  async stepsOfRuns(runIds: string[], trx: Db = this.db): Promise<Map<string, RunStepRow[]>> {
    const byRun = new Map<string, RunStepRow[]>(runIds.map((id) => [id, []]));
    if (runIds.length === 0) return byRun;
    const rows = await trx
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

  async listRuns(filter: { plan_id?: string; status?: RunStatus }, window: Page): Promise<Paged<RunRow>> {
    let query = this.db.selectFrom('runs').selectAll().orderBy('id', 'desc');
    if (filter.plan_id !== undefined) query = query.where('plan_id', '=', filter.plan_id);
    if (filter.status !== undefined) query = query.where('status', '=', filter.status);
    return paginate(query, window);
  }

  /**
   * Saves transitions of existing runs: each run's row (the columns a transition changes), its
   * new and changed steps (an upsert on the step key) and its timeline events. On PostgreSQL a
   * batch (a batch acknowledgement moves one run per message) is one statement, as long as it
   * fits one; elsewhere one statement per run row plus one per table for steps and events.
   * Every statement is compiled once per shape.
   */
  async saveTransitions(trx: Db, transitions: Transition[]): Promise<void> {
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
    const update = this.compiled('update-run', () =>
      trx.updateTable('runs').set(RUN_STATE_TEMPLATE as unknown as Pick<RunRow, RunStateColumn>).where('id', '=', '').compile().sql,
    );
    for (const { run } of transitions) {
      const params: unknown[] = [];
      bind(params, RUN_STATE_COLUMNS, [run]);
      params.push(run.id);
      await trx.executeQuery(CompiledQuery.raw(update, params));
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
    const key = `${transitions.length}:${steps.length}:${events.length}`;
    let text = this.transitionTexts.get(key);
    if (text === undefined) {
      const columns = ['id', ...RUN_STATE_COLUMNS] as const;
      const row = sql`(${sql.join(columns.map((c) => sql`${null}::${sql.raw(RUN_STATE_TYPES[c])}`))})`;
      const values = sql`(values ${sql.join(transitions.map(() => row))})`.as(sql`v(${sql.join(columns.map((c) => sql.ref(c)))})`);
      let query: QueryCreator<Database> = trx;
      if (steps.length > 0) {
        query = query.with('saved_steps', (db) => this.upsertSteps(db, nulls<RunStepRow>(STEP_TEMPLATE, steps.length)).returning('step_id')) as never;
      }
      if (events.length > 0) {
        query = query.with('saved_events', (db) => db.insertInto('run_events').values(nulls<NewRunEvent>(EVENT_TEMPLATE, events.length)).returning('seq')) as never;
      }
      text = query
        .updateTable('runs')
        .from(values as never)
        .set(Object.fromEntries(RUN_STATE_COLUMNS.map((c) => [c, sql.ref(`v.${c}`)])) as never)
        .where(sql<boolean>`${sql.ref('runs.id')} = ${sql.ref('v.id')}`)
        .compile().sql;
      this.transitionTexts.set(key, text);
    }
    // In the order of the statement: the WITHs (steps, events), then the VALUES rows.
    const params: unknown[] = [];
    bind(params, STEP_COLUMNS, steps);
    bind(params, EVENT_COLUMNS, events);
    for (const { run } of transitions) {
      params.push(run.id);
      bind(params, RUN_STATE_COLUMNS, [run]);
    }
    await trx.executeQuery(CompiledQuery.raw(text, params));
  }

  private upsertSteps(db: Db | QueryCreator<Database>, rows: RunStepRow[]) {
    return db
      .insertInto('run_steps')
      .values(rows)
      .onConflict((oc) =>
        oc.columns(['run_id', 'step_id']).doUpdateSet((eb) => {
          const set: Record<string, unknown> = {};
          for (const column of STEP_STATE_COLUMNS) set[column] = eb.ref(`excluded.${column}`);
          return set as never;
        }),
      );
  }

  /**
   * Claims up to `limit` active runs whose timer is due; on PostgreSQL they stay locked (SKIP
   * LOCKED) until the transaction ends, so another node advances different ones.
   */
  async claimDueRuns(trx: Db, now: number, limit: number): Promise<RunRow[]> {
    let query = trx
      .selectFrom('runs')
      .selectAll()
      .where('wake_at', '<=', now)
      .where('status', 'in', ACTIVE)
      .orderBy('wake_at')
      .limit(limit);
    if (this.caps.skipLocked) query = query.forUpdate().skipLocked();
    return query.execute();
  }

  /** The earliest timer of any run (finished runs have none, so the wake_at index answers alone). */
  async nextWakeAt(): Promise<number | null> {
    const row = await this.db
      .selectFrom('runs')
      .select((eb) => eb.fn.min('wake_at').as('next'))
      .where('wake_at', 'is not', null)
      .executeTakeFirst();
    return row?.next === null || row?.next === undefined ? null : Number(row.next);
  }

  /**
   * Runs with a step waiting for a published event (filtered by topic pattern by the caller).
   * Every publish asks, so the query is compiled once, and `wait_topic >= ''` (every text is)
   * rather than `is not null` lets SQLite search the wait_topic index, which holds a few
   * waiting steps among all steps, instead of scanning the table.
   */
  async eventWaiters(trx: Db = this.db): Promise<{ run_id: string; step_id: string; wait_topic: string }[]> {
    const text = this.compiled('waiters', () =>
      trx
        .selectFrom('run_steps')
        .select(['run_id', 'step_id', 'wait_topic'])
        .where('wait_topic', '>=', sql.lit(''))
        .where('status', '=', sql.lit('running'))
        .compile().sql,
    );
    return (await trx.executeQuery<{ run_id: string; step_id: string; wait_topic: string }>(CompiledQuery.raw(text, []))).rows;
  }

  async insertEvents(trx: Db, events: NewRunEvent[]): Promise<void> {
    await this.eventInsert.run(trx, events);
  }

  async listEvents(runId: string, window: Page): Promise<Paged<RunEventRow>> {
    return paginate(this.db.selectFrom('run_events').selectAll().where('run_id', '=', runId).orderBy('seq'), window);
  }

  // Triggers

  async insertTrigger(row: TriggerRow): Promise<void> {
    await this.db.insertInto('plan_triggers').values(row).execute();
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

  async findTrigger(id: string, trx: Db = this.db): Promise<TriggerView | undefined> {
    const row = await this.triggerView(trx).where('plan_triggers.id', '=', id).executeTakeFirst();
    return row && { ...row, last_fired_at: row.last_fired_at === null ? null : Number(row.last_fired_at) };
  }

  async findTriggerByPath(path: string): Promise<TriggerRow | undefined> {
    return this.db.selectFrom('plan_triggers').selectAll().where('webhook_path', '=', path).executeTakeFirst();
  }

  async listTriggers(planId: string | undefined, window: Page): Promise<Paged<TriggerView>> {
    let query = this.triggerView(this.db).orderBy('plan_triggers.id');
    if (planId !== undefined) query = query.where('plan_triggers.plan_id', '=', planId);
    const page = await paginate(query, window);
    return { items: page.items.map((row) => ({ ...row, last_fired_at: row.last_fired_at === null ? null : Number(row.last_fired_at) })), total: page.total };
  }

  async updateTrigger(id: string, changes: Partial<TriggerRow>, trx: Db = this.db): Promise<void> {
    await trx.updateTable('plan_triggers').set(changes).where('id', '=', id).execute();
  }

  async deleteTrigger(id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('trigger_fires').where('trigger_id', '=', id).execute();
      const result = await trx.deleteFrom('plan_triggers').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  /** Enabled event triggers (few; the caller matches their topic patterns). */
  async eventTriggers(): Promise<TriggerRow[]> {
    return this.db.selectFrom('plan_triggers').selectAll().where('type', '=', 'event').where('enabled', '=', 1).execute();
  }

  /** Claims enabled schedule triggers that are due (SKIP LOCKED on PostgreSQL, like routines). */
  async claimDueSchedules(trx: Db, now: number, limit: number): Promise<TriggerRow[]> {
    let query = trx
      .selectFrom('plan_triggers')
      .selectAll()
      .where('type', '=', 'schedule')
      .where('enabled', '=', 1)
      .where('next_fire_at', '<=', now)
      .orderBy('next_fire_at')
      .limit(limit);
    if (this.caps.skipLocked) query = query.forUpdate().skipLocked();
    return query.execute();
  }

  async nextScheduleAt(): Promise<number | null> {
    const row = await this.db
      .selectFrom('plan_triggers')
      .select((eb) => eb.fn.min('next_fire_at').as('next'))
      .where('type', '=', 'schedule')
      .where('enabled', '=', 1)
      .executeTakeFirst();
    return row?.next === null || row?.next === undefined ? null : Number(row.next);
  }

  /** Records fires; a schedule slot already in the ledger is left out of the result. */
  async insertFires(trx: Db, rows: FireRow[]): Promise<FireRow[]> {
    if (rows.length === 0) return [];
    const inserted = await trx
      .insertInto('trigger_fires')
      .values(rows)
      .onConflict((oc) => oc.columns(['trigger_id', 'scheduled_for']).doNothing())
      .returning('id')
      .execute();
    const ids = new Set(inserted.map((r) => r.id));
    return rows.filter((r) => ids.has(r.id));
  }

  /** Records fires that no other can conflict with (events and webhooks: no schedule slot). */
  async insertEventFires(trx: Db, rows: FireRow[]): Promise<void> {
    await this.fireInsert.run(trx, rows);
  }

  async updateFire(trx: Db, id: string, changes: Partial<FireRow>): Promise<void> {
    await trx.updateTable('trigger_fires').set(changes).where('id', '=', id).execute();
  }

  async listFires(triggerId: string, window: Page): Promise<Paged<FireRow>> {
    return paginate(this.db.selectFrom('trigger_fires').selectAll().where('trigger_id', '=', triggerId).orderBy('id', 'desc'), window);
  }

  /** Keeps the newest FIRES_KEPT fires of every trigger. */
  async pruneFires(): Promise<void> {
    const ranked = this.db
      .selectFrom('trigger_fires')
      .select(['id', (eb) => eb.fn.agg<number>('row_number').over((ob) => ob.partitionBy('trigger_id').orderBy('id', 'desc')).as('rank')])
      .as('ranked');
    const stale = this.db.selectFrom(ranked).select('ranked.id').where('ranked.rank', '>', FIRES_KEPT);
    await this.db.deleteFrom('trigger_fires').where('id', 'in', stale).execute();
  }

  /** Durations (ms) of the latest completed agent steps of each capability, up to `sample` each. */
  async stepDurations(capabilities: string[], sample = 50): Promise<Map<string, number[]>> {
    const durations = new Map<string, number[]>(capabilities.map((c) => [c, []]));
    if (capabilities.length === 0) return durations;
    const rows = await this.db
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

/** `count` copies of a template row (what an INSERT text is compiled from). */
function nulls<Row>(template: Record<keyof Row, null>, count: number): Row[] {
  return Array.from({ length: count }, () => template as Row);
}

/** Appends the values of `rows`, column by column, in the order of `columns`. */
function bind<Row extends object>(params: unknown[], columns: (keyof Row)[], rows: Row[]): void {
  for (const row of rows) for (const column of columns) params.push(row[column]);
}
