import type { Insertable, Selectable } from 'kysely';
import { Statements } from '../db/statements.js';
import { Store } from '../db/store.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { atCommit, atomically, dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { AuditAnchorTable, AuditLogTable } from './tables.js';

export type AuditRow = Selectable<AuditLogTable>;
export type NewAuditRow = Insertable<AuditLogTable>;
export type AnchorRow = Selectable<AuditAnchorTable>;

/**
 * The lock every append to the platform's logs takes on PostgreSQL (the events log's statement
 * trigger, migration 0015, takes it by the same name): held to the commit, it orders audit
 * appends across connections and nodes, and one lock for both logs cannot be taken in two orders.
 */
const APPEND_LOCK = 'events:append';

/** Which entries a reader asks for. */
export interface AuditFilter {
  actor?: string;
  action?: string;
  resource_id?: string;
  outcome?: string;
  /** `at` from (inclusive) and to (exclusive), epoch ms. */
  from?: number;
  to?: number;
}

/** The chain's head: what the next entry follows. */
export interface ChainHead {
  seq: number;
  hash: string;
}

export class AuditStore extends Store {
  // Every audited change appends: its two statements are compiled once.
  private readonly statements = new Statements(this.db);

  /**
   * Appends entries after the chain's head, in the caller's transaction (or one of their own).
   * `entries` gets the head (last entry, else the anchor, else null) and returns the rows: the
   * head is read under the append lock on PostgreSQL (held to the commit), and SQLite runs one
   * write transaction at a time (a group commit's transactions are savepoints run one after
   * another, and one that rolls back takes its entries with it before the next reads the head).
   */
  async append(tx: Tx, entries: (head: ChainHead | null) => NewAuditRow[]): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      await this.caps.transactionLock(trx, APPEND_LOCK);
      const head = this.statements.compiled('head', { one: 1 }, (v) =>
        trx.selectFrom('audit_log').select(['seq', 'hash']).orderBy('seq', 'desc').limit(v.one),
      );
      const [last] = (await trx.executeQuery(head)).rows;
      const start = last ?? (await trx.selectFrom('audit_anchor').select(['seq', 'hash']).where('id', '=', 1).executeTakeFirst());
      const rows = entries(start ? { seq: Number(start.seq), hash: start.hash } : null);
      if (rows.length > 0)
        await trx.executeQuery(
          this.statements.listed(`insert:${rows.length}`, { rows }, (v) => trx.insertInto('audit_log').values(v.rows)),
        );
    });
  }

  /**
   * `append` when `tx` commits (see db/tx.ts `atCommit`), or at once under `autocommit`: the
   * append lock is then taken after every row the transaction's work locked.
   */
  async appendAtCommit(tx: Tx, entries: (head: ChainHead | null) => NewAuditRow[]): Promise<void> {
    const append = () => this.append(tx, entries);
    if (!atCommit(tx, append)) await append();
  }

  /** Which of these entry ids are in the log (committed, and not trimmed). */
  async existing(tx: Tx, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await dbOf(tx, this.db).selectFrom('audit_log').select('id').where('id', 'in', ids).execute();
    return new Set(rows.map((row) => row.id));
  }

  /** Newest first. */
  async list(tx: Tx, filter: AuditFilter, window: Page): Promise<Paged<AuditRow>> {
    let query = dbOf(tx, this.db).selectFrom('audit_log').selectAll();
    if (filter.actor !== undefined) query = query.where('actor_id', '=', filter.actor);
    if (filter.action !== undefined) query = query.where('action', '=', filter.action);
    if (filter.resource_id !== undefined) query = query.where('resource_id', '=', filter.resource_id);
    if (filter.outcome !== undefined) query = query.where('outcome', '=', filter.outcome);
    if (filter.from !== undefined) query = query.where('at', '>=', filter.from);
    if (filter.to !== undefined) query = query.where('at', '<', filter.to);
    return this.paginate(tx, query, window, { keyset: [{ column: 'seq', direction: 'desc', type: 'number' }] });
  }

  /** Up to `limit` entries after position `afterSeq`, in chain order (verification pages with it). */
  async chainAfter(tx: Tx, afterSeq: number, limit: number): Promise<AuditRow[]> {
    return dbOf(tx, this.db).selectFrom('audit_log').selectAll().where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
  }

  async anchor(tx: Tx): Promise<AnchorRow | null> {
    return (await dbOf(tx, this.db).selectFrom('audit_anchor').selectAll().where('id', '=', 1).executeTakeFirst()) ?? null;
  }

  /**
   * Deletes up to `limit` of the oldest entries older than `before`, and moves the anchor to the
   * last one deleted, in one transaction under the append lock: verification then starts from
   * the anchor's hash. Returns how many it deleted.
   */
  async trim(before: number, limit: number, now: number): Promise<number> {
    return atomically(autocommit, this.db, async (trx) => {
      await this.caps.transactionLock(trx, APPEND_LOCK);
      const oldest = await trx.selectFrom('audit_log').select(['seq', 'at', 'hash']).orderBy('seq').limit(limit).execute();
      // Only a prefix of the chain goes: an entry older than `before` behind a newer one (a
      // coalesced denial's `at` is its first denial's) waits until the newer one goes too.
      let end = 0;
      while (end < oldest.length && Number(oldest[end]!.at) < before) end += 1;
      const last = oldest[end - 1];
      if (!last) return 0;
      await trx.deleteFrom('audit_log').where('seq', '<=', last.seq).execute();
      const anchor = { seq: Number(last.seq), hash: last.hash, trimmed_at: now };
      await trx
        .insertInto('audit_anchor')
        .values({ id: 1, ...anchor })
        .onConflict((oc) => oc.column('id').doUpdateSet(anchor))
        .execute();
      return end;
    });
  }
}
