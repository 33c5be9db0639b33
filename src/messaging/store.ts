import { sql, type Generated, type Selectable } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { paginate } from '../db/paginate.js';
import type { Page, Paged } from '../kernel/pagination.js';

export type MessageState = 'pending' | 'acked' | 'delivered' | 'dead' | 'redriven' | 'cancelled';

export interface MessagesTable {
  seq: Generated<number>;
  id: string;
  source: string;
  destination: string;
  event_name: string;
  payload: string;
  thread_id: string | null;
  delivery_semantic: 'at_least_once' | 'at_most_once';
  idempotency_key: string | null;
  state: MessageState;
  visible_at: number;
  retry_count: number;
  deliveries: number;
  max_deliveries: number;
  delivered_at: number | null;
  receiver: string | null;
  acked_at: number | null;
  output: string | null;
  dead_reason: string | null;
  dead_at: number | null;
  origin_kind: string | null;
  origin_ref: string | null;
  redriven_from: string | null;
  created_at: number;
}

export interface MessageDeliveriesTable {
  message_id: string;
  attempt: number;
  receiver: string;
  destination: string;
  delivered_at: number;
  outcome: 'acked' | 'rejected' | 'expired' | 'dead' | null;
  reason: string | null;
  ended_at: number | null;
}

export interface SessionsTable {
  id: string;
  name: string;
  metadata: string;
  created_by: string;
  created_at: number;
}

export interface ThreadsTable {
  id: string;
  session_id: string;
  name: string;
  mode: 'wild' | 'turn';
  participants: string;
  turn: number;
  created_by: string;
  created_at: number;
}

export interface SubscriptionsTable {
  id: string;
  agent_id: string;
  topic: string;
  wildcard: number;
  created_at: number;
}

export interface MessagingTables {
  messages: MessagesTable;
  message_deliveries: MessageDeliveriesTable;
  messaging_sessions: SessionsTable;
  messaging_threads: ThreadsTable;
  messaging_subscriptions: SubscriptionsTable;
}

export type MessageRow = Selectable<MessagesTable>;
export type NewMessageRow = Omit<MessageRow, 'seq'>;
export type DeliveryRow = Selectable<MessageDeliveriesTable>;
export type SessionRow = Selectable<SessionsTable>;
export type ThreadRow = Selectable<ThreadsTable>;
export type SubscriptionRow = Selectable<SubscriptionsTable>;

// SQLite allows 32766 bound variables per statement; a message row binds 23.
const INSERT_CHUNK = 1000;

export class MessagingStore {
  constructor(
    readonly db: Db,
    private readonly caps: DialectCapabilities,
  ) {}

  transaction<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }

  async insertMessages(trx: Db, rows: NewMessageRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await trx.insertInto('messages').values(rows.slice(i, i + INSERT_CHUNK)).execute();
    }
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
   * Leases up to `max` visible messages of `destination`, oldest first, in one statement:
   * `UPDATE … WHERE seq IN (SELECT … ORDER BY seq LIMIT n [FOR UPDATE SKIP LOCKED]) RETURNING`.
   * On PostgreSQL concurrent receivers skip each other's rows; on SQLite the writer lock
   * serializes them. At-most-once messages are settled as `delivered` on the spot.
   */
  async claim(trx: Db, destination: string, receiver: string, max: number, now: number, leaseMs: number): Promise<MessageRow[]> {
    const rows = await trx
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
          .where('visible_at', '<=', now)
          .whereRef('deliveries', '<', 'max_deliveries')
          .orderBy('seq')
          .limit(max);
        if (this.caps.skipLocked) candidates = candidates.forUpdate().skipLocked();
        return candidates;
      })
      .returningAll()
      .execute();
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
      // Earlier attempts of redelivered messages ended by lease expiry.
      const redelivered = rows.filter((r) => r.deliveries > 1);
      for (const r of redelivered) {
        await trx
          .updateTable('message_deliveries')
          .set({ outcome: 'expired', reason: 'visibility timeout expired', ended_at: now })
          .where('message_id', '=', r.id)
          .where('attempt', '<', r.deliveries)
          .where('outcome', 'is', null)
          .execute();
      }
    }
    return rows;
  }

  /** When the next pending message of `destination` becomes visible (for a long poll's sleep). */
  async nextVisibleAt(destination: string, now: number): Promise<number | null> {
    const row = await this.db
      .selectFrom('messages')
      .select((eb) => eb.fn.min('visible_at').as('next'))
      .where('destination', '=', destination)
      .where('state', '=', 'pending')
      .where('visible_at', '>', now)
      .whereRef('deliveries', '<', 'max_deliveries')
      .executeTakeFirst();
    return row?.next === null || row?.next === undefined ? null : Number(row.next);
  }

  async settle(
    trx: Db,
    id: string,
    changes: Partial<Pick<MessageRow, 'state' | 'visible_at' | 'acked_at' | 'output' | 'dead_reason' | 'dead_at'>>,
  ): Promise<void> {
    await trx.updateTable('messages').set(changes).where('id', '=', id).execute();
  }

  async endAttempt(trx: Db, id: string, attempt: number, outcome: DeliveryRow['outcome'], reason: string | null, now: number): Promise<void> {
    await trx
      .updateTable('message_deliveries')
      .set({ outcome, reason, ended_at: now })
      .where('message_id', '=', id)
      .where('attempt', '=', attempt)
      .execute();
  }

  async extendLease(trx: Db, id: string, visibleAt: number): Promise<void> {
    await trx.updateTable('messages').set({ visible_at: visibleAt }).where('id', '=', id).execute();
  }

  /** Leased messages whose lease expired with no delivery left: to be dead-lettered. */
  async claimExhausted(trx: Db, now: number, limit: number): Promise<MessageRow[]> {
    let query = trx
      .selectFrom('messages')
      .selectAll()
      .where('state', '=', 'pending')
      .where('visible_at', '<=', now)
      .whereRef('deliveries', '>=', 'max_deliveries')
      .orderBy('visible_at')
      .limit(limit);
    if (this.caps.skipLocked) query = query.forUpdate().skipLocked();
    return query.execute();
  }

  /** Destinations with messages that became visible in (since, now]: their long polls are woken. */
  async destinationsBecomingVisible(since: number, now: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('messages')
      .select('destination')
      .distinct()
      .where('state', '=', 'pending')
      .where('visible_at', '>', since)
      .where('visible_at', '<=', now)
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
  async deliveryStats(agentIds: string[], sample: number) {
    if (agentIds.length === 0) return { latencies: [], outcomes: [] };
    const latencies = await this.db
      .selectFrom('message_deliveries')
      .select(['destination', sql<number>`ended_at - delivered_at`.as('latency')])
      .where('destination', 'in', agentIds)
      .where('outcome', '=', 'acked')
      .orderBy('ended_at', 'desc')
      .limit(sample * agentIds.length)
      .execute();
    const outcomes = await this.db
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
    return trx
      .selectFrom('messaging_subscriptions')
      .selectAll()
      .where((eb) => eb.or([eb('topic', '=', topic), eb('wildcard', '=', 1)]))
      .orderBy('id')
      .execute();
  }
}
