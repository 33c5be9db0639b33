import { sql, type Selectable } from 'kysely';
import { BulkInsert } from '../db/bulk-insert.js';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { Store } from '../db/store.js';
import { dbOf } from '../db/tx.js';
import type { UsageSum } from '../kernel/usage-ports.js';
import type { Tx } from '../kernel/tx.js';
import type { Grouping } from './schemas.js';
import type { UsageRecordsTable } from './tables.js';

export type UsageRow = Selectable<UsageRecordsTable>;

/** The rollup's grain. */
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** Rows per INSERT of merged rollup rows (well under either backend's bound on parameters). */
const INSERT_CHUNK = 500;

const RECORD_TEMPLATE: Record<keyof UsageRow, null> = {
  id: null,
  agent_id: null,
  model: null,
  provider: null,
  input_tokens: null,
  output_tokens: null,
  cached_tokens: null,
  cost_usd: null,
  message_id: null,
  run_id: null,
  step_id: null,
  plan_id: null,
  capability: null,
  recorded_at: null,
};

/** What a total is grouped by, as a column of the rollup or of the records shaped as it (`day`: its hour, rounded down to the day). */
const GROUP_COLUMNS = {
  agent: sql<string>`agent_id`,
  capability: sql<string>`capability`,
  plan: sql<string>`plan_id`,
  run: sql<string>`run_id`,
  model: sql<string>`model`,
  day: sql<string>`hour - (hour % ${sql.lit(DAY_MS)})`,
} satisfies Record<Grouping, unknown>;

export interface TotalsFilter {
  agentId?: string;
  planId?: string;
  runId?: string;
  model?: string;
  /** Hour starts, in ms. */
  from?: number;
  until?: number;
}

export interface TotalRow extends UsageSum {
  key: string | number;
}

/** The sums of a grouped row as numbers (PostgreSQL answers numeric sums as text or float). */
function sums(row: Record<keyof UsageSum, unknown>): UsageSum {
  return {
    count: Number(row.count),
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
    cached_tokens: Number(row.cached_tokens),
    cost_usd: Number(row.cost_usd),
  };
}

/** Usage records and their hourly rollup: the only SQL of usage. */
export class UsageStore extends Store {
  // Each turn's acknowledgements with usage insert their records: compiled once per row count,
  // not built by the query builder each time (a fixed cost per batch, so per ack at low load).
  private readonly recordInsert: BulkInsert<'usage_records', keyof UsageRow>;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.recordInsert = new BulkInsert(db, 'usage_records', RECORD_TEMPLATE);
  }

  /** The plan of a run and the capability of its step (either may be unknown: undefined). */
  async runContext(tx: Tx, runId: string, stepId: string | null): Promise<{ plan_id: string; capability: string | null } | undefined> {
    // Reads coordination's tables by key: usage is linked to a run without coordination knowing of it.
    return dbOf(tx, this.db)
      .selectFrom('runs as r')
      .leftJoin('run_steps as s', (join) => join.onRef('s.run_id', '=', 'r.id').on('s.step_id', '=', stepId ?? ''))
      .select(['r.plan_id', 's.capability'])
      .where('r.id', '=', runId)
      .executeTakeFirst();
  }

  /** Inserts the records (a trigger adds each to its hour's row of the rollup: migration 0058). */
  async insert(tx: Tx, rows: readonly UsageRow[]): Promise<void> {
    await this.recordInsert.count(dbOf(tx, this.db), rows);
  }

  /** A run's records summed by step ('' for none), on the (run_id, step_id) index. */
  async byStepOfRun(tx: Tx, runId: string): Promise<(TotalRow & { key: string })[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('usage_records')
      .where('run_id', '=', runId)
      .select((eb) => [
        eb.fn.coalesce('step_id', sql.lit('')).as('key'),
        eb.fn.countAll<number>().as('count'),
        eb.fn.sum<number>('input_tokens').as('input_tokens'),
        eb.fn.sum<number>('output_tokens').as('output_tokens'),
        eb.fn.sum<number>('cached_tokens').as('cached_tokens'),
        eb.fn.sum<number>('cost_usd').as('cost_usd'),
      ])
      .groupBy('step_id')
      .execute();
    return rows.map((row) => ({ ...sums(row), key: String(row.key) }));
  }

  /**
   * Totals by `group`, the costliest first: from the rollup, or, by run or for one run (the
   * rollup has no run), from the records on their run or plan index.
   */
  async totals(tx: Tx, group: Grouping, filter: TotalsFilter, limit: number): Promise<TotalRow[]> {
    const db = dbOf(tx, this.db);
    const byRun = group === 'run' || filter.runId !== undefined;
    let records = db
      .selectFrom('usage_records')
      .select((eb) => [
        sql<number>`recorded_at - (recorded_at % ${sql.lit(HOUR_MS)})`.as('hour'),
        'agent_id',
        'model',
        eb.fn.coalesce('capability', sql.lit('')).as('capability'),
        eb.fn.coalesce('plan_id', sql.lit('')).as('plan_id'),
        eb.fn.coalesce('run_id', sql.lit('')).as('run_id'),
        sql.lit(1).as('count'),
        'input_tokens',
        'output_tokens',
        'cached_tokens',
        'cost_usd',
      ]);
    let rollup = db.selectFrom('usage_hourly').selectAll().select(sql.lit('').as('run_id'));
    // Each filter on the table's own column, so that its index serves it.
    if (filter.agentId !== undefined)
      [records, rollup] = [records.where('agent_id', '=', filter.agentId), rollup.where('agent_id', '=', filter.agentId)];
    if (filter.planId !== undefined)
      [records, rollup] = [records.where('plan_id', '=', filter.planId), rollup.where('plan_id', '=', filter.planId)];
    if (filter.runId !== undefined) records = records.where('run_id', '=', filter.runId);
    if (filter.model !== undefined)
      [records, rollup] = [records.where('model', '=', filter.model), rollup.where('model', '=', filter.model)];
    if (filter.from !== undefined)
      [records, rollup] = [records.where('recorded_at', '>=', filter.from), rollup.where('hour', '>=', filter.from)];
    if (filter.until !== undefined)
      [records, rollup] = [records.where('recorded_at', '<', filter.until), rollup.where('hour', '<', filter.until)];
    const key = GROUP_COLUMNS[group];
    const rows = await db
      // The two have the same columns (the rollup's run is ''): the cast only unites their builders' types.
      .selectFrom((byRun ? records : (rollup as unknown as typeof records)).as('usage'))
      .select((eb) => [
        key.as('key'),
        eb.fn.sum<number>('count').as('count'),
        eb.fn.sum<number>('input_tokens').as('input_tokens'),
        eb.fn.sum<number>('output_tokens').as('output_tokens'),
        eb.fn.sum<number>('cached_tokens').as('cached_tokens'),
        eb.fn.sum<number>('cost_usd').as('cost_usd'),
      ])
      .groupBy(key)
      .orderBy(sql`6`, 'desc')
      .orderBy(key)
      .limit(limit)
      .execute();
    return rows.map((row) => ({ ...sums(row), key: row.key }));
  }

  /** Per agent and capability ('' for usage outside capability-routed steps): cost and calls since `since`, from the rollup. */
  async costsSince(tx: Tx, agentIds: readonly string[], since: number) {
    if (agentIds.length === 0) return [];
    return dbOf(tx, this.db)
      .selectFrom('usage_hourly')
      .select((eb) => ['agent_id', 'capability', eb.fn.sum<number>('cost_usd').as('cost_usd'), eb.fn.sum<number>('count').as('calls')])
      .where('agent_id', 'in', agentIds)
      .where('hour', '>=', since)
      .groupBy(['agent_id', 'capability'])
      .execute();
  }

  /** The start of the oldest day before `before` whose rollup rows are not yet merged into one per key, or null. */
  async oldestUnmergedDay(tx: Tx, before: number): Promise<number | null> {
    const row = await dbOf(tx, this.db)
      .selectFrom('usage_hourly')
      .select((eb) => eb.fn.min('hour').as('hour'))
      .where('hour', '<', before)
      .where(sql<boolean>`hour % ${sql.lit(DAY_MS)} <> 0`)
      .executeTakeFirst();
    return row?.hour == null ? null : Number(row.hour) - (Number(row.hour) % DAY_MS);
  }

  /** Merges the rollup rows of the day starting at `day` into one row per key at its start; returns how many rows went. */
  async mergeDay(tx: Tx, day: number): Promise<number> {
    const db = dbOf(tx, this.db);
    const merged = await db
      .selectFrom('usage_hourly')
      .select((eb) => [
        'agent_id',
        'model',
        'capability',
        'plan_id',
        eb.fn.sum<number>('count').as('count'),
        eb.fn.sum<number>('input_tokens').as('input_tokens'),
        eb.fn.sum<number>('output_tokens').as('output_tokens'),
        eb.fn.sum<number>('cached_tokens').as('cached_tokens'),
        eb.fn.sum<number>('cost_usd').as('cost_usd'),
      ])
      .where('hour', '>=', day)
      .where('hour', '<', day + DAY_MS)
      .groupBy(['agent_id', 'model', 'capability', 'plan_id'])
      .execute();
    const removed = await db
      .deleteFrom('usage_hourly')
      .where('hour', '>=', day)
      .where('hour', '<', day + DAY_MS)
      .executeTakeFirst();
    for (let i = 0; i < merged.length; i += INSERT_CHUNK) {
      await db
        .insertInto('usage_hourly')
        .values(merged.slice(i, i + INSERT_CHUNK).map((row) => ({ ...row, ...sums(row), hour: day })))
        .execute();
    }
    return Number(removed.numDeletedRows) - merged.length;
  }
}
