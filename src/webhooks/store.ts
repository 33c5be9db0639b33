import type { Insertable, Selectable, Updateable } from 'kysely';
import { nextDue } from '../db/capabilities.js';
import type { Tx } from '../kernel/tx.js';
import { atomically, dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { DeliveryAttemptsTable, DeliveryStatus, WebhookDeliveriesTable, WebhooksTable } from './tables.js';

export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type NewDeliveryRow = Insertable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<DeliveryAttemptsTable>;

/** What fan-out reads of an enabled webhook. */
export type WebhookCursor = Pick<WebhookRow, 'id' | 'types' | 'cursor'>;

/** A claimed delivery: what its attempt sends, and the attempt number that owns it. */
export type ClaimedDelivery = Pick<
  DeliveryRow,
  'id' | 'webhook_id' | 'event_id' | 'payload' | 'attempts' | 'first_attempt_at' | 'last_attempt_at'
>;

/** How an attempt ended, as it is written to its delivery. */
export type AttemptOutcome = Pick<
  DeliveryRow,
  'status' | 'next_attempt_at' | 'last_status_code' | 'latency_ms' | 'error' | 'response_body'
>;

export class WebhooksStore extends Store {
  // ---- webhooks ----

  async insertWebhook(tx: Tx, row: WebhookRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('webhooks').values(row).execute();
  }

  async findWebhook(tx: Tx, id: string): Promise<WebhookRow | undefined> {
    return dbOf(tx, this.db).selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The webhook, its row locked until `tx` ends (PostgreSQL), so changes to it are serialized. */
  async lockWebhook(tx: Tx, id: string): Promise<WebhookRow | undefined> {
    return this.caps.lock(dbOf(tx, this.db).selectFrom('webhooks').selectAll().where('id', '=', id)).executeTakeFirst();
  }

  /** The url, secret and channel type of each of these webhooks, by id. */
  async targets(tx: Tx, ids: readonly string[]): Promise<Map<string, Pick<WebhookRow, 'url' | 'secret' | 'channel_type'>>> {
    if (ids.length === 0) return new Map();
    const rows = await dbOf(tx, this.db)
      .selectFrom('webhooks')
      .select(['id', 'url', 'secret', 'channel_type'])
      .where(this.caps.inTextList('id', ids))
      .execute();
    return new Map(rows.map((row) => [row.id, row]));
  }

  async listWebhooks(tx: Tx, window: Page): Promise<Paged<WebhookRow>> {
    return this.paginate(tx, dbOf(tx, this.db).selectFrom('webhooks').selectAll().where('channel_type', 'is', null).orderBy('id'), window);
  }

  async updateWebhook(tx: Tx, id: string, changes: Updateable<WebhooksTable>): Promise<void> {
    await dbOf(tx, this.db).updateTable('webhooks').set(changes).where('id', '=', id).execute();
  }

  /** Deletes a webhook with its delivery log. */
  async deleteWebhook(tx: Tx, id: string): Promise<boolean> {
    const db = dbOf(tx, this.db);
    await db
      .deleteFrom('webhook_delivery_attempts')
      .where('delivery_id', 'in', db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', id))
      .execute();
    await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
    const result = await db.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /** Every enabled event webhook's patterns and position in the log (a channel's target matches no event). */
  async enabledCursors(tx: Tx): Promise<WebhookCursor[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('webhooks')
      .select(['id', 'types', 'cursor'])
      .where('enabled', '=', 1)
      .where('channel_type', 'is', null)
      .execute();
    return rows.map((row) => ({ ...row, cursor: Number(row.cursor) }));
  }

  /**
   * Moves an enabled webhook's cursor from `from` to `to`; false when it was not at `from`
   * (another node fanned those events out first: on PostgreSQL the UPDATE waits for that
   * node's transaction and then finds the new cursor).
   */
  async advanceCursor(tx: Tx, id: string, from: number, to: number): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .updateTable('webhooks')
      .set({ cursor: to })
      .where('id', '=', id)
      .where('cursor', '=', from)
      .where('enabled', '=', 1)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Starts a failing streak at `now` unless one is running. */
  async markFailing(tx: Tx, id: string, now: number): Promise<void> {
    await dbOf(tx, this.db)
      .updateTable('webhooks')
      .set({ failing_since: now })
      .where('id', '=', id)
      .where('failing_since', 'is', null)
      .execute();
  }

  /** Ends a failing streak (a delivery succeeded). */
  async clearFailing(tx: Tx, id: string): Promise<void> {
    await dbOf(tx, this.db)
      .updateTable('webhooks')
      .set({ failing_since: null })
      .where('id', '=', id)
      .where('failing_since', 'is not', null)
      .execute();
  }

  // ---- deliveries ----

  /** Inserts deliveries; one that exists for its (webhook, event) already is left alone. */
  async insertDeliveries(tx: Tx, rows: NewDeliveryRow[]): Promise<void> {
    if (rows.length === 0) return;
    await dbOf(tx, this.db)
      .insertInto('webhook_deliveries')
      .values(rows)
      .onConflict((oc) => oc.columns(['webhook_id', 'event_seq']).doNothing())
      .execute();
  }

  async findDelivery(tx: Tx, webhookId: string, id: string): Promise<DeliveryRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', id)
      .where('webhook_id', '=', webhookId)
      .executeTakeFirst();
  }

  /** A webhook's deliveries, newest first. */
  async listDeliveries(tx: Tx, webhookId: string, filter: { status?: DeliveryStatus }, window: Page): Promise<Paged<DeliveryRow>> {
    let query = dbOf(tx, this.db).selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId);
    if (filter.status !== undefined) query = query.where('status', '=', filter.status);
    return this.paginate(tx, query.orderBy('id', 'desc'), window);
  }

  /** Makes a pending or failed delivery due at `now`; false when it is delivered (or gone). */
  async makeDue(tx: Tx, id: string, now: number): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now })
      .where('id', '=', id)
      .where('status', '!=', 'delivered')
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Claims up to `limit` deliveries of enabled webhooks due at `now` in one statement: each
   * gets its next attempt number and is not due again before `leaseUntil`, so no other pass
   * or node takes it while its attempt runs (and one whose node died is taken again after).
   * On PostgreSQL the rows another node is claiming are skipped (SKIP LOCKED).
   */
  async claimDue(tx: Tx, now: number, leaseUntil: number, limit: number): Promise<ClaimedDelivery[]> {
    const db = dbOf(tx, this.db);
    const due = this.caps.claim(
      db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where('webhook_id', 'in', (eb) => eb.selectFrom('webhooks').select('id').where('enabled', '=', 1))
        .orderBy('next_attempt_at')
        .limit(limit),
    );
    const rows = await db
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        attempts: eb('attempts', '+', 1),
        next_attempt_at: leaseUntil,
        last_attempt_at: now,
        first_attempt_at: eb.fn.coalesce('first_attempt_at', eb.val(now)),
        // The last attempt is this one now: nothing measured until it ends.
        last_status_code: null,
        latency_ms: null,
        error: null,
        response_body: null,
      }))
      .where('id', 'in', due)
      .returning(['id', 'webhook_id', 'event_id', 'payload', 'attempts', 'first_attempt_at', 'last_attempt_at'])
      .execute();
    return rows.map((row) => ({ ...row, first_attempt_at: Number(row.first_attempt_at), last_attempt_at: Number(row.last_attempt_at) }));
  }

  /**
   * Writes how the claimed attempt ended, on its delivery and in the delivery's attempt log;
   * false (nothing written) when the delivery moved on (re-claimed, deleted).
   */
  async recordAttempt(tx: Tx, delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<boolean> {
    const db = dbOf(tx, this.db);
    const result = await db
      .updateTable('webhook_deliveries')
      .set(outcome)
      .where('id', '=', delivery.id)
      .where('attempts', '=', delivery.attempts)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) return false;
    await db
      .insertInto('webhook_delivery_attempts')
      .values({
        delivery_id: delivery.id,
        attempt: delivery.attempts,
        started_at: delivery.last_attempt_at!,
        status_code: outcome.last_status_code,
        latency_ms: outcome.latency_ms,
        error: outcome.error,
      })
      .execute();
    return true;
  }

  /** A delivery's attempts, oldest first. */
  async listAttempts(tx: Tx, deliveryId: string, window: Page): Promise<Paged<AttemptRow>> {
    return this.paginate(
      tx,
      dbOf(tx, this.db).selectFrom('webhook_delivery_attempts').selectAll().where('delivery_id', '=', deliveryId).orderBy('attempt'),
      window,
    );
  }

  /** Deletes up to `limit` delivered or failed deliveries created before `cutoff`; returns how many. */
  async deleteSettledBefore(tx: Tx, cutoff: number, limit: number): Promise<number> {
    return atomically(tx, this.db, async (trx) => {
      const old = (
        await trx
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('status', '!=', 'pending')
          .where('created_at', '<', cutoff)
          .limit(limit)
          .execute()
      ).map((row) => row.id);
      if (old.length === 0) return 0;
      await trx.deleteFrom('webhook_delivery_attempts').where(this.caps.inTextList('delivery_id', old)).execute();
      const result = await trx.deleteFrom('webhook_deliveries').where(this.caps.inTextList('id', old)).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }

  /** The earliest next attempt of a pending delivery of an enabled webhook. */
  async nextDueAt(tx: Tx): Promise<number | null> {
    const row = await dbOf(tx, this.db)
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min('next_attempt_at').as('next'))
      .where('status', '=', 'pending')
      .where('webhook_id', 'in', (eb) => eb.selectFrom('webhooks').select('id').where('enabled', '=', 1))
      .executeTakeFirst();
    return nextDue(row);
  }
}
