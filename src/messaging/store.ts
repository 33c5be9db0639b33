import { CompiledQuery, sql, type Selectable } from 'kysely';
import { BulkInsert } from '../db/bulk-insert.js';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { paginate } from '../db/paginate.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { MessagesTable, MessageDeliveriesTable, SessionsTable, ThreadsTable, SubscriptionsTable } from './tables.js';

export type MessageRow = Selectable<MessagesTable>;
export type NewMessageRow = Omit<MessageRow, 'seq'>;
export type DeliveryRow = Selectable<MessageDeliveriesTable>;
export type SessionRow = Selectable<SessionsTable>;
export type ThreadRow = Selectable<ThreadsTable>;
export type SubscriptionRow = Selectable<SubscriptionsTable>;

/**
 * `visible_at` as an expression no index covers. Without statistics and with bound values,
 * SQLite chose messages_expiry (state, visible_at) for an inbox's claim and next-visible
 * lookup: a walk over every pending message of every inbox, then a sort (receive took 10 ms
 * instead of 1 ms beside 50,000 messages pending elsewhere). Hiding visible_at leaves
 * messages_inbox (destination, state, seq), whose order is the dequeue order; PostgreSQL
 * picks that index anyway.
 */
const unindexedVisibleAt = sql<number>`+${sql.ref('visible_at')}`;

/** How an attempt ends when its lease ran out and the message was delivered again. */
const EXPIRED_ATTEMPT = (now: number) => ({ outcome: 'expired' as const, reason: 'visibility timeout expired', ended_at: now });

/** A message and its delivery count, which is the number of its current attempt. */
type AttemptOf = Pick<MessageRow, 'id' | 'deliveries'>;

/** Message ids grouped by their delivery count (a batch is nearly always one group). */
function idsByAttempt(rows: AttemptOf[]): Map<number, string[]> {
  const groups = new Map<number, string[]>();
  for (const row of rows) {
    const ids = groups.get(row.deliveries);
    if (ids) ids.push(row.id);
    else groups.set(row.deliveries, [row.id]);
  }
  return groups;
}

/**
 * A new message with every column null: the template of the cached INSERT (typed as a full
 * record, so a column added to the table cannot be left out).
 */
const MESSAGE_TEMPLATE: Record<keyof NewMessageRow, null> = {
  id: null,
  source: null,
  destination: null,
  event_name: null,
  payload: null,
  thread_id: null,
  delivery_semantic: null,
  idempotency_key: null,
  state: null,
  visible_at: null,
  retry_count: null,
  deliveries: null,
  max_deliveries: null,
  delivered_at: null,
  receiver: null,
  acked_at: null,
  output: null,
  dead_reason: null,
  dead_at: null,
  origin_kind: null,
  origin_ref: null,
  redriven_from: null,
  created_at: null,
};

export class MessagingStore {
  /** Columnar: a burst of 10,000 routine fires puts 10,000 messages in one insert per batch. */
  private readonly messageInsert: BulkInsert<NewMessageRow>;
  private candidatesSql: string | null = null;

  constructor(
    readonly db: Db,
    private readonly caps: DialectCapabilities,
  ) {
    this.messageInsert = new BulkInsert<NewMessageRow>(MESSAGE_TEMPLATE, (trx, rows) => trx.insertInto('messages').values(rows).compile(), {
      columnar: caps,
    });
  }

  transaction<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }

  async insertMessages(trx: Db, rows: NewMessageRow[]): Promise<void> {
    await this.messageInsert.run(trx, rows);
  }

  isUniqueViolation(err: unknown): boolean {
    return this.caps.isUniqueViolation(err);
  }

  async findMessage(id: string, trx: Db = this.db): Promise<MessageRow | undefined> {
    return trx.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findMessages(trx: Db, ids: string[]): Promise<MessageRow[]> {
    if (ids.length === 0) return [];
    return trx.selectFrom('messages').selectAll().where('id', 'in', ids).execute();
  }

  async findByIdempotencyKey(trx: Db, source: string, key: string): Promise<MessageRow | undefined> {
    return trx
      .selectFrom('messages')
      .selectAll()
      .where('source', '=', source)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
  }

  async clearIdempotencyKey(trx: Db, id: string): Promise<void> {
    await trx.updateTable('messages').set({ idempotency_key: null }).where('id', '=', id).execute();
  }

  /**
   * Leases up to `max` visible messages of `destination`, oldest first:
   * `UPDATE … WHERE seq IN (SELECT … ORDER BY seq LIMIT n [FOR UPDATE SKIP LOCKED]) RETURNING`,
   * and records the delivery attempts. On PostgreSQL concurrent receivers skip each other's
   * rows; on SQLite the writer lock serializes them. At-most-once messages are settled as
   * `delivered` on the spot.
   */
  /** PostgreSQL leases in one statement (atomic without a transaction); SQLite in several. */
  get claimsInOneStatement(): boolean {
    return this.caps.kind === 'postgres';
  }

  async claim(trx: Db, destination: string, receiver: string, max: number, now: number, leaseMs: number): Promise<MessageRow[]> {
    if (this.claimsInOneStatement) return this.claimInOneStatement(trx, destination, receiver, max, now, leaseMs);
    const rows = await this.lease(trx, destination, receiver, max, now, leaseMs).execute();
    rows.sort((a, b) => a.seq - b.seq);
    if (rows.length > 0) {
      await trx
        .insertInto('message_deliveries')
        .values(
          rows.map((r) => ({
            message_id: r.id,
            attempt: r.deliveries,
            receiver,
            destination,
            delivered_at: now,
            outcome: null,
            reason: null,
            ended_at: null,
          })),
        )
        .execute();
      // Earlier attempts of redelivered messages ended by lease expiry: one statement per
      // attempt number, not per message.
      for (const [attempt, ids] of idsByAttempt(rows.filter((r) => r.deliveries > 1))) {
        await trx
          .updateTable('message_deliveries')
          .set(EXPIRED_ATTEMPT(now))
          .where('message_id', 'in', ids)
          .where('attempt', '<', attempt)
          .where('outcome', 'is', null)
          .execute();
      }
    }
    return rows;
  }

  /**
   * PostgreSQL runs the lease, the new attempts and the ends of the expired ones as one
   * statement (data-modifying CTEs, which SQLite lacks): one round trip instead of two or three.
   * The CTEs share one snapshot, so `expired` cannot touch the attempts `attempts` inserts.
   */
  private async claimInOneStatement(trx: Db, destination: string, receiver: string, max: number, now: number, leaseMs: number) {
    return trx
      .with('claimed', () => this.lease(trx, destination, receiver, max, now, leaseMs))
      .with('attempts', (db) =>
        db
          .insertInto('message_deliveries')
          .columns(['message_id', 'attempt', 'receiver', 'destination', 'delivered_at'])
          .expression((eb) =>
            eb
              .selectFrom('claimed')
              .select(['id', 'deliveries', sql<string>`cast(${receiver} as text)`.as('receiver'), 'destination', sql<number>`cast(${now} as bigint)`.as('delivered_at')]),
          )
          .returning('message_id'),
      )
      .with('expired', (db) =>
        db
          .updateTable('message_deliveries')
          .from('claimed')
          .set(EXPIRED_ATTEMPT(now))
          .whereRef('message_deliveries.message_id', '=', 'claimed.id')
          .whereRef('message_deliveries.attempt', '<', 'claimed.deliveries')
          .where('message_deliveries.outcome', 'is', null)
          .returning('message_deliveries.message_id'),
      )
      .selectFrom('claimed')
      .selectAll()
      .orderBy('seq')
      .execute();
  }

  private lease(trx: Db, destination: string, receiver: string, max: number, now: number, leaseMs: number) {
    return trx
      .updateTable('messages')
      .set({
        state: sql`case when delivery_semantic = 'at_most_once' then 'delivered' else 'pending' end`,
        visible_at: now + leaseMs,
        retry_count: sql`deliveries`,
        deliveries: sql`deliveries + 1`,
        delivered_at: now,
        receiver,
      })
      .where('seq', 'in', (eb) => {
        let candidates = eb
          .selectFrom('messages')
          .select('seq')
          .where('destination', '=', destination)
          .where('state', '=', 'pending')
          .where(unindexedVisibleAt, '<=', now)
          .whereRef('deliveries', '<', 'max_deliveries')
          .orderBy('seq')
          .limit(max);
        if (this.caps.skipLocked) candidates = candidates.forUpdate().skipLocked();
        return candidates;
      })
      .returningAll();
  }

  /** When the next pending message of `destination` becomes visible (for a long poll's sleep). */
  async nextVisibleAt(destination: string, now: number): Promise<number | null> {
    const row = await this.db
      .selectFrom('messages')
      .select((eb) => eb.fn.min(unindexedVisibleAt).as('next'))
      .where('destination', '=', destination)
      .where('state', '=', 'pending')
      .where(unindexedVisibleAt, '>', now)
      .whereRef('deliveries', '<', 'max_deliveries')
      .executeTakeFirst();
    return row?.next === null || row?.next === undefined ? null : Number(row.next);
  }

  /** Applies the same changes to every message of `ids` (up to 500: one statement). */
  async settle(
    trx: Db,
    ids: string[],
    changes: Partial<Pick<MessageRow, 'state' | 'visible_at' | 'acked_at' | 'output' | 'dead_reason' | 'dead_at'>>,
  ): Promise<void> {
    await trx.updateTable('messages').set(changes).where('id', 'in', ids).execute();
  }

  /** Ends the current delivery attempt of each message: one statement per attempt number. */
  async endAttempts(trx: Db, rows: AttemptOf[], outcome: DeliveryRow['outcome'], reason: string | null, now: number): Promise<void> {
    for (const [attempt, ids] of idsByAttempt(rows)) {
      await trx
        .updateTable('message_deliveries')
        .set({ outcome, reason, ended_at: now })
        .where('message_id', 'in', ids)
        .where('attempt', '=', attempt)
        .execute();
    }
  }

  async extendLease(trx: Db, id: string, visibleAt: number): Promise<void> {
    await trx.updateTable('messages').set({ visible_at: visibleAt }).where('id', '=', id).execute();
  }

  /**
   * Leased messages whose lease expired in [from, now] with no delivery left: to be
   * dead-lettered. The lower bound keeps the scan of messages_expiry to the leases that ran out
   * since the reaper's last pass; without it every pass walked the whole visible backlog
   * (100,000 pending messages: 4 full scans a second).
   */
  async claimExhausted(trx: Db, from: number, now: number, limit: number): Promise<MessageRow[]> {
    let query = trx
      .selectFrom('messages')
      .selectAll()
      .where('state', '=', 'pending')
      .where('visible_at', '>=', from)
      .where('visible_at', '<=', now)
      .whereRef('deliveries', '>=', 'max_deliveries')
      .orderBy('visible_at')
      .limit(limit);
    if (this.caps.skipLocked) query = query.forUpdate().skipLocked();
    return query.execute();
  }

  /**
   * Destinations with messages that became visible in (since, now] later than they were
   * created (delayed, backed off, lease expired): their long polls are woken. Messages visible
   * from their creation woke their inbox when they were sent.
   */
  async destinationsBecomingVisible(since: number, now: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('messages')
      .select('destination')
      .distinct()
      .where('state', '=', 'pending')
      .where('visible_at', '>', since)
      .where('visible_at', '<=', now)
      .whereRef('visible_at', '>', 'created_at')
      .limit(10_000)
      .execute();
    return rows.map((r) => r.destination);
  }

  async listDeadLetters(destination: string | undefined, window: Page): Promise<Paged<MessageRow>> {
    let query = this.db.selectFrom('messages').selectAll().where('state', '=', 'dead').orderBy('seq', 'desc');
    if (destination !== undefined) query = query.where('destination', '=', destination);
    return paginate(query, window);
  }

  async attemptsOf(ids: string[]): Promise<DeliveryRow[]> {
    if (ids.length === 0) return [];
    return this.db
      .selectFrom('message_deliveries')
      .selectAll()
      .where('message_id', 'in', ids)
      .orderBy('message_id')
      .orderBy('attempt')
      .execute();
  }

  async threadMessages(threadId: string, window: Page): Promise<Paged<MessageRow>> {
    const query = this.db.selectFrom('messages').selectAll().where('thread_id', '=', threadId).orderBy('seq');
    return paginate(query, window);
  }

  /** Per agent: recent delivery→ack times and the count of each attempt outcome. */
  async deliveryStats(agentIds: string[], sample: number, db: Db = this.db) {
    if (agentIds.length === 0) return { latencies: [], outcomes: [] };
    const latencies = await db
      .selectFrom('message_deliveries')
      .select(['destination', sql<number>`ended_at - delivered_at`.as('latency')])
      .where('destination', 'in', agentIds)
      .where('outcome', '=', 'acked')
      .orderBy('ended_at', 'desc')
      .limit(sample * agentIds.length)
      .execute();
    const outcomes = await db
      .selectFrom('message_deliveries')
      .select(['destination', 'outcome', (eb) => eb.fn.countAll<number>().as('n')])
      .where('destination', 'in', agentIds)
      .where('outcome', 'is not', null)
      .groupBy(['destination', 'outcome'])
      .execute();
    return { latencies, outcomes };
  }

  async insertSession(row: SessionRow): Promise<void> {
    await this.db.insertInto('messaging_sessions').values(row).execute();
  }

  async findSession(id: string): Promise<SessionRow | undefined> {
    return this.db.selectFrom('messaging_sessions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async listSessions(window: Page): Promise<Paged<SessionRow>> {
    return paginate(this.db.selectFrom('messaging_sessions').selectAll().orderBy('id'), window);
  }

  async insertThread(row: ThreadRow): Promise<void> {
    await this.db.insertInto('messaging_threads').values(row).execute();
  }

  async findThread(id: string, trx: Db = this.db): Promise<ThreadRow | undefined> {
    return trx.selectFrom('messaging_threads').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Advances a turn-mode thread from `turn`; false when another sender took the turn first. */
  async advanceTurn(trx: Db, id: string, turn: number): Promise<boolean> {
    const result = await trx
      .updateTable('messaging_threads')
      .set({ turn: turn + 1 })
      .where('id', '=', id)
      .where('turn', '=', turn)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async insertSubscription(row: SubscriptionRow): Promise<void> {
    await this.db.insertInto('messaging_subscriptions').values(row).execute();
  }

  async findSubscription(id: string): Promise<SubscriptionRow | undefined> {
    return this.db.selectFrom('messaging_subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findSubscriptionFor(agentId: string, topic: string): Promise<SubscriptionRow | undefined> {
    return this.db
      .selectFrom('messaging_subscriptions')
      .selectAll()
      .where('agent_id', '=', agentId)
      .where('topic', '=', topic)
      .executeTakeFirst();
  }

  async listSubscriptions(agentId: string | undefined, window: Page): Promise<Paged<SubscriptionRow>> {
    let query = this.db.selectFrom('messaging_subscriptions').selectAll().orderBy('id');
    if (agentId !== undefined) query = query.where('agent_id', '=', agentId);
    return paginate(query, window);
  }

  async deleteSubscription(id: string): Promise<void> {
    await this.db.deleteFrom('messaging_subscriptions').where('id', '=', id).execute();
  }

  /** Subscriptions that may match `topic`: the exact ones and every wildcard pattern. */
  async candidateSubscriptions(trx: Db, topic: string): Promise<SubscriptionRow[]> {
    // Asked on every publish: compiled once (building the query cost more than running it).
    this.candidatesSql ??= trx
      .selectFrom('messaging_subscriptions')
      .selectAll()
      .where((eb) => eb.or([eb('topic', '=', ''), eb('wildcard', '=', 1)]))
      .orderBy('id')
      .compile().sql;
    return (await trx.executeQuery<SubscriptionRow>(CompiledQuery.raw(this.candidatesSql, [topic, 1]))).rows;
  }
}
