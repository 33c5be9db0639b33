import type { Selectable } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import { nextDue } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { BulkInsert } from '../db/bulk-insert.js';
import type { Tx } from '../kernel/tx.js';
import { atomically, dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { CoordinationStore } from './coordination-store.js';
import type { PlanTriggersTable, TriggerFiresTable } from './tables.js';

export type TriggerRow = Selectable<PlanTriggersTable>;
/** A trigger as read: with the time of its latest started run, from the fire ledger. */
export type TriggerView = TriggerRow & { last_fired_at: number | null };
export type FireRow = Selectable<TriggerFiresTable>;

/** Fires kept per trigger (older ones are pruned by the timer worker). */
export const FIRES_KEPT = 100;

// Every column of a fire, each null: typed as a full record, so a column added to the table cannot be left out.
const FIRE_TEMPLATE: Record<keyof FireRow, null> = {
  id: null,
  trigger_id: null,
  scheduled_for: null,
  outcome: null,
  reason: null,
  run_id: null,
  created_at: null,
};

/** Triggers and their fire ledger (the only SQL of the plan_triggers and trigger_fires tables). */
export class TriggerStore extends CoordinationStore {
  /** A schedule slot already in the ledger is left out (ON CONFLICT DO NOTHING). */
  private readonly fireInsert: BulkInsert<'trigger_fires', keyof FireRow>;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.fireInsert = new BulkInsert(db, 'trigger_fires', FIRE_TEMPLATE, {
      clauses: (insert) => insert.onConflict((oc) => oc.columns(['trigger_id', 'scheduled_for']).doNothing()).returning('id'),
    });
  }

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
    const page = await this.paginate(tx, query, window);
    return {
      ...page,
      items: page.items.map((row) => ({ ...row, last_fired_at: row.last_fired_at === null ? null : Number(row.last_fired_at) })),
    };
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
    return this.paginate(
      tx,
      dbOf(tx, this.db).selectFrom('trigger_fires').selectAll().where('trigger_id', '=', triggerId).orderBy('id', 'desc'),
      window,
    );
  }

  /** Keeps the newest FIRES_KEPT fires of every trigger. */
  async pruneFires(tx: Tx): Promise<void> {
    const db = dbOf(tx, this.db);
    const ranked = db
      .selectFrom('trigger_fires')
      .select([
        'id',
        (eb) =>
          eb.fn
            .agg<number>('row_number')
            .over((ob) => ob.partitionBy('trigger_id').orderBy('id', 'desc'))
            .as('rank'),
      ])
      .as('ranked');
    const stale = db.selectFrom(ranked).select('ranked.id').where('ranked.rank', '>', FIRES_KEPT);
    await db.deleteFrom('trigger_fires').where('id', 'in', stale).execute();
  }
}
