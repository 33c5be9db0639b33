import { sql } from 'kysely';
import { BulkInsert } from '../db/bulk-insert.js';
import { nextDue, type DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { Statements } from '../db/statements.js';
import type { Tx } from '../kernel/tx.js';
import { atomically, dbOf, txOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import { TurnBatch } from '../kernel/turn-batch.js';
import { acknowledgeUnheard, claimInboxes, type UnheardAck } from './inboxes-store.js';
import { heldByOrderingKey, inDequeueOrder, orderingLocks, rankByFairness } from './flow-store.js';
import { leasedAt, unindexedVisibleAt } from './visibility-store.js';
import { DELIVERY_TEMPLATE, MESSAGE_TEMPLATE, type DeliveryRow, type MessageRow, type NewMessageRow } from './message-rows.js';

export type { DeliveryRow, MessageRow, NewMessageRow, SessionRow, SubscriptionRow, ThreadRow } from './message-rows.js';

/**
 * An acknowledgement's checks of state and inbox, hidden from the indexes so that the id index
 * alone finds its rows: with statistics older than a burst (a fresh table, 100,000 messages sent
 * since the last ANALYZE) PostgreSQL's plan walked the inbox's whole pending range on
 * messages_inbox_time (destination, state, created_at) for each batch of acknowledgements.
 */
const unindexedState = sql<string>`(${sql.ref('state')} || '')`;
const unindexedDestination = sql<string>`(${sql.ref('destination')} || '')`;

/** How an attempt ends when its lease ran out and the message was delivered again. */
const EXPIRED_ATTEMPT = (now: number) => ({ outcome: 'expired' as const, reason: 'visibility timeout expired', ended_at: now });

/** What a receive leases: up to `max` visible messages of `destination`, to `receiver` for `leaseMs`. */
export interface Lease {
  destination: string;
  receiver: string;
  max: number;
  now: number;
  leaseMs: number;
}

/** What a claim's caller does with the leased messages inside the claim's transaction. */
export interface ClaimFollowUp {
  /** Whether `record` has anything to do for these messages (else no transaction is opened for it). */
  wants(rows: MessageRow[]): boolean;
  record(tx: Tx, rows: MessageRow[]): Promise<void>;
}

/**
 * The values of a claim's statements. The constants are named values too, so the texts bind
 * them as parameters, as the query builder did (a literal could change SQLite's plan).
 */
function leaseValues({ destination, receiver, max, now, leaseMs }: Lease) {
  return { destination, receiver, max, now, visibleAt: now + leaseMs, pending: 'pending' as const, ...EXPIRED_ATTEMPT(now) };
}
type LeaseValues = ReturnType<typeof leaseValues>;
/** Claims of different inboxes one statement carries at most. */
const MAX_CLAIMS = 64;

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

export class MessagingStore extends Store {
  /** Columnar: a burst of 10,000 routine fires puts 10,000 messages in one insert per batch. */
  private readonly messageBatchInsert: BulkInsert<'messages', keyof NewMessageRow>;
  private readonly deliveryInsert: BulkInsert<'message_deliveries', keyof DeliveryRow>;
  /** The insert of one message, the claim and next-visible: asked by every send and receive. */
  private readonly statements: Statements;
  /** Whether `acknowledgeUnheard` is available: PostgreSQL's data-modifying CTEs. */
  readonly acksInOneStatement = this.caps.writableCte;
  /**
   * PostgreSQL: a turn's claims of different inboxes in one statement (the wake-ups of one INSERT
   * of sends claim together); else each its own, failing alone (`failed`: the others committed).
   */
  private readonly claims = new TurnBatch<LeaseValues, MessageRow[] | { failed: unknown }>(async (batch) => {
    if (batch.length > 1 && new Set(batch.map((values) => values.destination)).size === batch.length) {
      const rows = await claimInboxes(this.db, this.statements, batch);
      return batch.map((values) => rows.filter((row) => row.destination === values.destination));
    }
    return Promise.all(batch.map((values) => this.claimOne(values).catch((failed: unknown) => ({ failed }))));
  }, MAX_CLAIMS);

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.messageBatchInsert = new BulkInsert(db, 'messages', MESSAGE_TEMPLATE, { columnar: caps });
    this.deliveryInsert = new BulkInsert(db, 'message_deliveries', DELIVERY_TEMPLATE);
    this.statements = new Statements(db);
  }

  /**
   * New messages. One (a send, a task's or an A2A message) is the INSERT written here, compiled
   * once. Several (a batch, a publish, a burst of routine fires, a run's steps) insert the same
   * columns from one array per column on PostgreSQL, `INSERT INTO messages (…) SELECT … FROM
   * unnest($1::text[], …)`, or from one JSON text of the rows on SQLite, `INSERT INTO messages
   * (…) SELECT … FROM json_each(?)`, a column every message shares bound once (db/bulk-insert.ts).
   */
  async insertMessages(tx: Tx, rows: readonly NewMessageRow[], locks: readonly string[] = []): Promise<void> {
    const db = dbOf(tx, this.db);
    if (rows.length !== 1 || locks.length > 0) await this.messageBatchInsert.run(db, rows, locks);
    else await db.executeQuery(this.statements.compiled('insert-message', rows[0]!, (v) => this.db.insertInto('messages').values(v)));
  }

  /**
   * New messages with their flow control: their fairness ranks set, then inserted by one
   * statement that first locks their ordering keys until its transaction commits (flow-store.ts;
   * under `autocommit`, the statement's own).
   */
  async insertNew(tx: Tx, rows: NewMessageRow[]): Promise<void> {
    await rankByFairness(this.db, tx, rows);
    await this.insertMessages(tx, rows, orderingLocks(this.caps, rows));
  }

  async findMessage(tx: Tx, id: string): Promise<MessageRow | undefined> {
    return dbOf(tx, this.db).selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findMessages(tx: Tx, ids: string[]): Promise<MessageRow[]> {
    if (ids.length === 0) return [];
    return dbOf(tx, this.db).selectFrom('messages').selectAll().where('id', 'in', ids).execute();
  }

  async findByIdempotencyKey(tx: Tx, source: string, key: string): Promise<MessageRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('messages')
      .selectAll()
      .where('source', '=', source)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
  }

  async clearIdempotencyKey(tx: Tx, id: string): Promise<void> {
    await dbOf(tx, this.db).updateTable('messages').set({ idempotency_key: null }).where('id', '=', id).execute();
  }

  /**
   * Leases up to `lease.max` visible messages of its destination, highest priority first, then
   * lowest fairness rank, then oldest, skipping messages held by their ordering key:
   * `UPDATE … WHERE seq IN (SELECT … ORDER BY priority DESC, fair_rank, seq LIMIT n [FOR UPDATE
   * SKIP LOCKED]) RETURNING`,
   * records the delivery attempts and ends earlier attempts whose lease expired. On PostgreSQL
   * concurrent receivers skip each other's rows; on SQLite the writer lock serializes them.
   * At-most-once messages are settled as `delivered` on the spot. `followUp` records what the
   * caller must (producers that follow deliveries) in the same transaction. It takes no `tx`:
   * how the claim commits is its own choice (on PostgreSQL, one statement outside any transaction).
   */
  async claim(lease: Lease, followUp: ClaimFollowUp, limit: number | null = null): Promise<MessageRow[]> {
    if (limit !== null) return this.claimWithin(lease, followUp, limit);
    const values = leaseValues(lease);
    if (this.caps.writableCte) {
      // One statement, atomic on its own: no BEGIN and COMMIT round trips around it. Producers
      // that follow deliveries hear of them right after, before the receive answers.
      const rows = await this.claims.add(values);
      if ('failed' in rows) throw rows.failed;
      if (followUp.wants(rows)) await this.inTransaction((tx) => followUp.record(tx, rows));
      return rows;
    }
    return this.inTransaction(async (tx) => {
      const rows = await this.claimStatementEach(dbOf(tx, this.db), values);
      if (followUp.wants(rows)) await followUp.record(tx, rows);
      return rows;
    });
  }

  private async claimOne(values: LeaseValues): Promise<MessageRow[]> {
    return (await this.db.executeQuery(this.statements.compiled('claim', values, (v) => this.claimInOneStatement(v)))).rows;
  }

  /**
   * A claim for an agent that holds at most `limit` messages leased at once: its claims take
   * turns (a lock named for the inbox; SQLite has one writer), each leasing what room is left.
   */
  private claimWithin(lease: Lease, followUp: ClaimFollowUp, limit: number): Promise<MessageRow[]> {
    return this.inTransaction(async (tx) => {
      const trx = dbOf(tx, this.db);
      await this.caps.transactionLock(trx, `inbox:${lease.destination}`);
      const held = await trx
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('destination', '=', lease.destination)
        .where((eb) => leasedAt(eb, lease.now))
        .executeTakeFirstOrThrow();
      const room = Math.min(lease.max, limit - Number(held.n));
      if (room <= 0) return [];
      const rows = await this.claimStatementEach(trx, leaseValues({ ...lease, max: room }));
      if (followUp.wants(rows)) await followUp.record(tx, rows);
      return rows;
    });
  }

  /**
   * SQLite (and a limited agent's claim): the lease, the settling of at-most-once messages, the
   * new attempts and the ends of the expired ones, one by one. The lease leaves `state` out of
   * its SET: SQLite rewrites the entries of every index on a column an UPDATE sets, same value or
   * not, and five indexes of messages hold state (bench/RESULTS.md, "Ordering keys").
   */
  private async claimStatementEach(trx: Db, values: LeaseValues): Promise<MessageRow[]> {
    const rows = (await trx.executeQuery(this.statements.compiled('lease', values, (v) => this.lease(v, false)))).rows;
    if (rows.length === 0) return rows;
    rows.sort(inDequeueOrder);
    const atMostOnce = rows.filter((row) => row.delivery_semantic === 'at_most_once');
    if (atMostOnce.length > 0) {
      await this.settle(
        txOf(trx),
        atMostOnce.map((row) => row.id),
        { state: 'delivered' },
      );
      for (const row of atMostOnce) row.state = 'delivered';
    }
    const { receiver, destination, now } = values;
    await this.deliveryInsert.run(
      trx,
      rows.map((r) => ({
        message_id: r.id,
        attempt: r.deliveries,
        receiver,
        destination,
        delivered_at: now,
        outcome: null,
        reason: null,
        ended_at: null,
        capability: r.capability,
      })),
    );
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
    return rows;
  }

  /**
   * PostgreSQL runs the lease, the new attempts and the ends of the expired ones as one
   * statement (data-modifying CTEs, which SQLite lacks): one round trip instead of two or three.
   * The CTEs share one snapshot, so `expired` cannot touch the attempts `attempts` inserts.
   * The claim of one inbox stays this statement rather than `claimInboxes` with one lease: that
   * one (unnest, a lateral join, a limit from a column) cost PostgreSQL +50% CPU per message and
   * +0.9 ms p50 on W3 over the HTTP long poll, in two runs of each (bench/RESULTS.md).
   */
  private claimInOneStatement(v: LeaseValues) {
    return this.db
      .with('claimed', () => this.lease(v, true))
      .with('attempts', (db) =>
        db
          .insertInto('message_deliveries')
          .columns(['message_id', 'attempt', 'receiver', 'destination', 'delivered_at', 'capability'])
          .expression((eb) =>
            eb
              .selectFrom('claimed')
              .select([
                'id',
                'deliveries',
                sql<string>`cast(${v.receiver} as text)`.as('receiver'),
                'destination',
                sql<number>`cast(${v.now} as bigint)`.as('delivered_at'),
                'capability',
              ]),
          )
          .returning('message_id'),
      )
      .with('expired', (db) =>
        db
          .updateTable('message_deliveries')
          .from('claimed')
          .set({ outcome: v.outcome, reason: v.reason, ended_at: v.ended_at })
          .whereRef('message_deliveries.message_id', '=', 'claimed.id')
          .whereRef('message_deliveries.attempt', '<', 'claimed.deliveries')
          .where('message_deliveries.outcome', 'is', null)
          .returning('message_deliveries.message_id'),
      )
      .selectFrom('claimed')
      .selectAll()
      .orderBy('priority', 'desc')
      .orderBy('fair_rank')
      .orderBy('seq');
  }

  /** The lease's UPDATE; `settlesAtMostOnce`: it also settles at-most-once messages as `delivered`. */
  private lease(v: LeaseValues, settlesAtMostOnce: boolean) {
    return this.db
      .updateTable('messages')
      .set({
        ...(settlesAtMostOnce && { state: sql`case when delivery_semantic = 'at_most_once' then 'delivered' else 'pending' end` }),
        visible_at: v.visibleAt,
        retry_count: sql`deliveries`,
        deliveries: sql`deliveries + 1`,
        delivered_at: v.now,
        receiver: v.receiver,
      })
      .where('seq', 'in', (eb) =>
        this.caps.claim(
          eb
            .selectFrom('messages')
            .select('seq')
            .where('destination', '=', v.destination)
            .where('state', '=', v.pending)
            .where(unindexedVisibleAt, '<=', v.now)
            .whereRef('deliveries', '<', 'max_deliveries')
            .where((eb) => eb.or([eb('ordering_key', 'is', null), eb.not(heldByOrderingKey())]))
            .orderBy('priority', 'desc')
            .orderBy('fair_rank')
            .orderBy('seq')
            .limit(v.max),
        ),
      )
      .returningAll();
  }

  /** When the next pending message of `destination` becomes visible (for a long poll's sleep). */
  async nextVisibleAt(tx: Tx, destination: string, now: number): Promise<number | null> {
    const query = this.statements.compiled('next-visible', { destination, now, pending: 'pending' as const }, (v) =>
      this.db
        .selectFrom('messages')
        .select((eb) => eb.fn.min(unindexedVisibleAt).as('next'))
        .where('destination', '=', v.destination)
        .where('state', '=', v.pending)
        .where(unindexedVisibleAt, '>', v.now)
        .whereRef('deliveries', '<', 'max_deliveries'),
    );
    return nextDue((await dbOf(tx, this.db).executeQuery(query)).rows[0]);
  }

  /** Applies the same changes to every message of `ids` (up to 500: one statement). */
  async settle(
    tx: Tx,
    ids: string[],
    changes: Partial<Pick<MessageRow, 'state' | 'visible_at' | 'acked_at' | 'output' | 'output_ref' | 'dead_reason' | 'dead_at'>>,
  ): Promise<void> {
    await dbOf(tx, this.db).updateTable('messages').set(changes).where('id', 'in', ids).execute();
  }

  /**
   * Acknowledges those of `ids` that are pending and delivered (and addressed to `destination`
   * when one is given), ending their current attempts; returns the rows it acknowledged. The
   * checks are the statement's own conditions, so the common case needs no read first; on
   * PostgreSQL both updates are one statement (data-modifying CTEs): one round trip.
   */
  async acknowledgeReceived(tx: Tx, ids: string[], destination: string | null, output: string | null, now: number): Promise<MessageRow[]> {
    if (!this.caps.writableCte) return this.acknowledgeRead(tx, ids, destination, output, now);
    const db = dbOf(tx, this.db);
    const values = { ids, destination, output, now, pending: 'pending' as const, acked: 'acked' as const, noReason: null, never: 0 };
    // Compiled once per number of ids (and whether the destination is checked).
    const query = this.statements.listed(`ack:${ids.length}:${destination === null}`, values, (v) => {
      let acked = this.db
        .updateTable('messages')
        .set({ state: v.acked, acked_at: v.now, output: v.output })
        .where('id', 'in', v.ids)
        .where(unindexedState, '=', v.pending)
        .where('deliveries', '>', v.never);
      if (destination !== null) acked = acked.where(unindexedDestination, '=', v.destination!);
      return this.db
        .with('acked', () => acked.returningAll())
        .with('ended', (cte) =>
          cte
            .updateTable('message_deliveries')
            .from('acked')
            .set({ outcome: v.acked, reason: v.noReason, ended_at: v.now })
            .whereRef('message_deliveries.message_id', '=', 'acked.id')
            .whereRef('message_deliveries.attempt', '=', 'acked.deliveries')
            .returning('message_deliveries.message_id'),
        )
        .selectFrom('acked')
        .selectAll();
    });
    return (await db.executeQuery(query)).rows as MessageRow[];
  }

  /** On PostgreSQL: inboxes-store.ts. */
  acknowledgeUnheard(acks: readonly UnheardAck[], now: number): Promise<MessageRow[]> {
    return acknowledgeUnheard(this.db, this.statements, acks, now);
  }

  /**
   * SQLite (no data-modifying CTEs, no round trips to save): the rows read, then updated by id.
   * Measured faster there than one UPDATE … RETURNING * for batches of 100 (peers W2 over HTTP:
   * 16.0k vs 13.8k msg/s).
   */
  private async acknowledgeRead(
    tx: Tx,
    ids: string[],
    destination: string | null,
    output: string | null,
    now: number,
  ): Promise<MessageRow[]> {
    const rows = (await this.findMessages(tx, ids)).filter(
      (row) => row.state === 'pending' && row.deliveries > 0 && (destination === null || row.destination === destination),
    );
    if (rows.length === 0) return [];
    await this.settle(
      tx,
      rows.map((row) => row.id),
      { state: 'acked', acked_at: now, output },
    );
    await this.endAttempts(tx, rows, 'acked', null, now);
    return rows.map((row) => ({ ...row, state: 'acked', acked_at: now, output }));
  }

  /** Cancels the message if it is still pending: in `tx`, or under `autocommit` in a transaction of its own. */
  async cancelPending(tx: Tx, id: string): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      const row = await this.findMessage(txOf(trx), id);
      if (row && row.state === 'pending') await this.settle(txOf(trx), [id], { state: 'cancelled' });
    });
  }

  /** Sets one field of a pending message's payload: what its next delivery carries. No-op once it is settled. */
  async setPendingPayloadField(tx: Tx, id: string, field: string, value: unknown): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      const row = await this.caps.lock(trx.selectFrom('messages').select(['payload', 'state']).where('id', '=', id)).executeTakeFirst();
      if (!row || row.state !== 'pending') return;
      const payload = { ...(JSON.parse(row.payload) as Record<string, unknown>), [field]: value };
      await trx
        .updateTable('messages')
        .set({ payload: JSON.stringify(payload) })
        .where('id', '=', id)
        .execute();
    });
  }

  /** Ends the current delivery attempt of each message: one statement per attempt number. */
  async endAttempts(tx: Tx, rows: AttemptOf[], outcome: DeliveryRow['outcome'], reason: string | null, now: number): Promise<void> {
    const db = dbOf(tx, this.db);
    for (const [attempt, ids] of idsByAttempt(rows)) {
      await db
        .updateTable('message_deliveries')
        .set({ outcome, reason, ended_at: now })
        .where('message_id', 'in', ids)
        .where('attempt', '=', attempt)
        .execute();
    }
  }

  async extendLease(tx: Tx, id: string, visibleAt: number): Promise<void> {
    await dbOf(tx, this.db).updateTable('messages').set({ visible_at: visibleAt }).where('id', '=', id).execute();
  }

  /**
   * Leased messages whose lease expired in [from, now] with no delivery left: to be
   * dead-lettered. The lower bound keeps the scan of messages_expiry to the leases that ran out
   * since the reaper's last pass; without it every pass walked the whole visible backlog
   * (100,000 pending messages: 4 full scans a second).
   */
  async claimExhausted(tx: Tx, from: number, now: number, limit: number): Promise<MessageRow[]> {
    const query = dbOf(tx, this.db)
      .selectFrom('messages')
      .selectAll()
      .where('state', '=', 'pending')
      .where('visible_at', '>=', from)
      .where('visible_at', '<=', now)
      .whereRef('deliveries', '>=', 'max_deliveries')
      .orderBy('visible_at')
      .limit(limit);
    return this.caps.claim(query).execute();
  }

  /**
   * Destinations with messages that became visible in (since, now] later than they were
   * created (delayed, backed off, lease expired): their long polls are woken. Messages visible
   * from their creation woke their inbox when they were sent.
   */
  async destinationsBecomingVisible(tx: Tx, since: number, now: number): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
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
}
