import { sql, type Insertable, type Selectable, type SqlBool } from 'kysely';
import { BulkInsert } from '../db/bulk-insert.js';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { EventsTable } from './tables.js';

export type EventRow = Selectable<EventsTable>;
export type NewEventRow = Required<Omit<Insertable<EventsTable>, 'seq'>>;

/** Column order of event inserts (seq is the table's own). */
const EVENT_TEMPLATE: Record<keyof NewEventRow, null> = {
  type: null,
  subject: null,
  actor: null,
  data: null,
  reason: null,
  readers: null,
  created_at: null,
};

/** Which events a reader asks for and may see. */
export interface EventFilter {
  /** Only these types (a pattern already expanded to the types it matches); undefined: all. */
  types?: readonly string[];
  subject?: string;
  /** Only events after this position. */
  afterSeq?: number;
  /**
   * The reader's `agent:<id>` and `group:<name>` tokens: events without readers, or naming one
   * of them. undefined: every event (an admin).
   */
  readers?: readonly string[];
}

export class EventsStore extends Store {
  // Every transition of a run appends: compiled once per row count, the insert spared the
  // query builder's work on each (bench/RESULTS.md, "Events").
  private readonly insert: BulkInsert<'events', keyof NewEventRow>;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.insert = new BulkInsert(db, 'events', EVENT_TEMPLATE);
  }

  /**
   * Inserts events in the caller's transaction, in order. SQLite serializes writers, so its
   * autoincrement is commit order already; PostgreSQL hands out identities at insert, and
   * concurrent transactions may commit in another order: the insert takes the log's append
   * lock first (a statement trigger, migration 0015), held to the commit, so they commit in
   * seq order: a reader that saw seq N never later finds a new event below N.
   */
  async append(tx: Tx, rows: NewEventRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.insert.count(dbOf(tx, this.db), rows);
  }

  async list(tx: Tx, filter: EventFilter, window: Page): Promise<Paged<EventRow>> {
    return this.paginate(tx, this.filtered(tx, filter).selectAll(), window, {
      keyset: [{ column: 'seq', direction: 'asc', type: 'number' }],
    });
  }

  /** Up to `limit` events after `filter.afterSeq`, oldest first. */
  async readAfter(tx: Tx, filter: EventFilter, limit: number): Promise<EventRow[]> {
    return this.filtered(tx, filter).selectAll().orderBy('seq').limit(limit).execute();
  }

  private filtered(tx: Tx, filter: EventFilter) {
    let query = dbOf(tx, this.db).selectFrom('events');
    // The types as a list of parameters (there are few): SQLite's planner then walks events_type
    // for each, where behind a json_each() it would walk the whole log after the cursor instead.
    if (filter.types !== undefined)
      query =
        filter.types.length === 0
          ? query.where(sql<SqlBool>`false`)
          : filter.types.length === 1
            ? query.where('type', '=', filter.types[0]!)
            : query.where('type', 'in', filter.types);
    if (filter.subject !== undefined) query = query.where('subject', '=', filter.subject);
    if (filter.afterSeq !== undefined) query = query.where('seq', '>', filter.afterSeq);
    const readers = filter.readers;
    if (readers !== undefined)
      query = query.where((eb) => eb.or([eb('readers', 'is', null), this.caps.jsonArrayHoldsAny('readers', readers)]));
    return query;
  }

  /** The position of the newest event (0 when the log is empty). */
  async lastSeq(tx: Tx): Promise<number> {
    const row = await dbOf(tx, this.db)
      .selectFrom('events')
      .select((eb) => eb.fn.max('seq').as('seq'))
      .executeTakeFirst();
    return Number(row?.seq ?? 0);
  }

  /** The first `limit` events of the log (position and time), for the retention sweep. */
  async oldest(tx: Tx, limit: number): Promise<{ seq: number; created_at: number }[]> {
    const rows = await dbOf(tx, this.db).selectFrom('events').select(['seq', 'created_at']).orderBy('seq').limit(limit).execute();
    return rows.map((row) => ({ seq: Number(row.seq), created_at: Number(row.created_at) }));
  }

  /** Deletes the log up to and including `seq`. */
  async deleteThrough(tx: Tx, seq: number): Promise<number> {
    const result = await dbOf(tx, this.db).deleteFrom('events').where('seq', '<=', seq).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
