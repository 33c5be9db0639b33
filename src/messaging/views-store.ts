import { sql } from 'kysely';
import { Store } from '../db/store.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { heldByOrderingKey } from './flow-store.js';
import { leasedAt, type DeliveryRow, type MessageRow } from './store.js';

/** A message with whether a message of its ordering key sent before it, or leased now, is unsettled. */
export type HeldMessageRow = MessageRow & { held: boolean };

/** One agent's inbox in numbers: what waits, what is leased, what is dead. */
export interface InboxCounts {
  destination: string;
  pending: number;
  leased: number;
  dead: number;
  oldest_pending_at: number | null;
}

/**
 * The SQL of looking at inboxes (inbox-views.ts): their numbers, their messages, their dead
 * letters and their agents' delivery stats. None of it is on a send's or a receive's path.
 */
export class InboxViewsStore extends Store {
  async listDeadLetters(tx: Tx, destination: string | undefined, window: Page): Promise<Paged<MessageRow>> {
    let query = dbOf(tx, this.db).selectFrom('messages').selectAll().where('state', '=', 'dead');
    if (destination !== undefined) query = query.where('destination', '=', destination);
    // Newest first in the order of messages_retention (state, created_at), so a page stops after its rows.
    return this.paginate(tx, query, window, {
      keyset: [
        { column: 'created_at', direction: 'desc', type: 'number' },
        { column: 'seq', direction: 'desc', type: 'number' },
      ],
    });
  }

  /**
   * The inboxes holding messages (pending, leased or dead), by agent id, or the one of
   * `destination`. The list and its total read the counters (a row per agent, kept by triggers);
   * the split of a page's pending messages into leased and waiting, and the oldest waiting, walk
   * only the pending messages of the page's inboxes, on messages_inbox.
   */
  async inboxCounts(tx: Tx, destination: string | undefined, now: number, window: Page, deepestFirst = false): Promise<Paged<InboxCounts>> {
    const db = dbOf(tx, this.db);
    let counters = db.selectFrom('inbox_counters').where((eb) => eb.or([eb('pending', '>', 0), eb('dead', '>', 0)]));
    if (destination !== undefined) counters = counters.where('destination', '=', destination);
    const ordered = deepestFirst ? counters.selectAll().orderBy('pending', 'desc') : counters.selectAll();
    const page = await this.paginate(tx, ordered.orderBy('destination'), window, {
      count: async () => {
        const row = await counters.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
        return Number(row?.n ?? 0);
      },
    });
    const pendingOf = page.items.filter((row) => Number(row.pending) > 0).map((row) => row.destination);
    const held =
      pendingOf.length === 0
        ? []
        : await db
            .selectFrom('messages')
            .where('messages.destination', 'in', pendingOf)
            .where('messages.state', '=', 'pending')
            .select((eb) => {
              const leased = leasedAt(eb, now);
              return [
                'messages.destination',
                eb.fn.sum<number | string>(eb.case().when(leased).then(1).else(0).end()).as('leased'),
                eb.fn
                  .min<number | string | null>(eb.case().when(eb.not(leased)).then(eb.ref('messages.created_at')).end())
                  .as('oldest_pending_at'),
              ];
            })
            .groupBy('messages.destination')
            .execute();
    const heldBy = new Map(held.map((row) => [row.destination, row]));
    return {
      ...page,
      items: page.items.map((row) => {
        const leased = Number(heldBy.get(row.destination)?.leased ?? 0);
        const oldest = heldBy.get(row.destination)?.oldest_pending_at ?? null;
        return {
          destination: row.destination,
          pending: Number(row.pending) - leased,
          leased,
          dead: Number(row.dead),
          oldest_pending_at: oldest === null ? null : Number(oldest),
        };
      }),
    };
  }

  /**
   * A page of the messages of `destination` that wait (pending) or are leased now, in the order
   * receives take them, each with whether its ordering key holds it back.
   */
  async inboxMessages(tx: Tx, destination: string, leased: boolean, now: number, window: Page): Promise<Paged<HeldMessageRow>> {
    const query = dbOf(tx, this.db)
      .selectFrom('messages')
      .selectAll()
      .select(heldByOrderingKey(now).as('held'))
      .where('destination', '=', destination)
      .where('state', '=', 'pending')
      .where((eb) => (leased ? leasedAt(eb, now) : eb.not(leasedAt(eb, now))));
    const page = await this.paginate(tx, query, window, {
      keyset: [
        { column: 'messages.priority', direction: 'desc', type: 'number' },
        { column: 'messages.fair_rank', direction: 'asc', type: 'number' },
        { column: 'messages.seq', direction: 'asc', type: 'number' },
      ],
    });
    // SQLite answers a boolean as 0 or 1.
    return { ...page, items: page.items.map((row) => ({ ...row, held: Boolean(row.held) })) };
  }

  async attemptsOf(tx: Tx, ids: string[]): Promise<DeliveryRow[]> {
    if (ids.length === 0) return [];
    return dbOf(tx, this.db)
      .selectFrom('message_deliveries')
      .selectAll()
      .where('message_id', 'in', ids)
      .orderBy('message_id')
      .orderBy('attempt')
      .execute();
  }

  /** Per agent: recent delivery→ack times and the count of each attempt outcome. */
  async deliveryStats(tx: Tx, agentIds: string[], sample: number) {
    if (agentIds.length === 0) return { latencies: [], outcomes: [] };
    const db = dbOf(tx, this.db);
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
}
