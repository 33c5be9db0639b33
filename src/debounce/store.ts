import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { nextDue, type DialectCapabilities } from '../db/capabilities.js';
import { Store } from '../db/store.js';
import { dbOf } from '../db/tx.js';
import type { Tx } from '../kernel/tx.js';
import type { DebounceOwnerKind, DebouncesTable } from './tables.js';

export type DebounceRow = Selectable<DebouncesTable>;

/** A burst of matching events starts one run, `seconds` after the last (`max_wait_s` after the first at most), with the last one's input. */
export interface Debounce {
  seconds: number;
  /** A template over `event` (`{{event.customer}}`): each value debounces apart. */
  key?: string;
  max_wait_s?: number;
}

/** The burst row an event at `now` joins (or begins) under `key`. */
export function burstRow(
  ownerKind: DebounceOwnerKind,
  ownerId: string,
  debounce: Debounce,
  key: string,
  event: unknown,
  now: number,
): DebounceRow {
  const deadline = debounce.max_wait_s === undefined ? null : now + debounce.max_wait_s * 1000;
  return {
    owner_kind: ownerKind,
    owner_id: ownerId,
    debounce_key: key,
    event: JSON.stringify(event),
    first_at: now,
    fire_at: Math.min(now + debounce.seconds * 1000, deadline ?? Infinity),
    deadline,
  };
}

/** The debounced bursts of one kind of owner (triggers or routines), in the shared `debounces` table. */
export class DebounceStore extends Store {
  constructor(
    db: Db,
    caps: DialectCapabilities,
    private readonly ownerKind: DebounceOwnerKind,
  ) {
    super(db, caps);
  }

  /**
   * An event of a debounced owner: the burst of its key keeps the event and fires `fire_at`
   * (never past its deadline), or a new burst begins. True when it began (its timer is new).
   */
  async join(tx: Tx, row: DebounceRow): Promise<boolean> {
    const saved = await dbOf(tx, this.db)
      .insertInto('debounces')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['owner_kind', 'owner_id', 'debounce_key']).doUpdateSet((eb) => ({
          event: eb.ref('excluded.event'),
          fire_at: sql<number>`case when ${eb.ref('debounces.deadline')} < ${eb.ref('excluded.fire_at')} then ${eb.ref('debounces.deadline')} else ${eb.ref('excluded.fire_at')} end`,
        })),
      )
      .returning('first_at')
      .executeTakeFirstOrThrow();
    return Number(saved.first_at) === row.first_at;
  }

  /** Takes up to `limit` bursts due to fire (deleted; on PostgreSQL claimed with SKIP LOCKED). */
  async takeDue(tx: Tx, now: number, limit: number): Promise<DebounceRow[]> {
    const db = dbOf(tx, this.db);
    const due = await this.caps
      .claim(
        db
          .selectFrom('debounces')
          .selectAll()
          .where('owner_kind', '=', this.ownerKind)
          .where('fire_at', '<=', now)
          .orderBy('fire_at')
          .limit(limit),
      )
      .execute();
    for (const row of due) {
      await db
        .deleteFrom('debounces')
        .where('owner_kind', '=', this.ownerKind)
        .where('owner_id', '=', row.owner_id)
        .where('debounce_key', '=', row.debounce_key)
        .execute();
    }
    return due;
  }

  /**
   * Takes the bursts due at `now()` in transactions of up to `limit` and hands each to `start`
   * in its transaction (true when it started something); how many started.
   */
  async fireDue(now: () => number, limit: number, start: (tx: Tx, burst: DebounceRow) => Promise<boolean>): Promise<number> {
    let started = 0;
    for (;;) {
      const taken = await this.inTransaction(async (tx) => {
        const due = await this.takeDue(tx, now(), limit);
        for (const burst of due) if (await start(tx, burst)) started++;
        return due.length;
      });
      if (taken < limit) return started;
    }
  }

  /** When the next burst of this kind fires. */
  async nextAt(tx: Tx): Promise<number | null> {
    return nextDue(
      await dbOf(tx, this.db)
        .selectFrom('debounces')
        .select((eb) => eb.fn.min('fire_at').as('next'))
        .where('owner_kind', '=', this.ownerKind)
        .executeTakeFirst(),
    );
  }
}
