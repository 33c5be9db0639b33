import { sql } from 'kysely';
import { Store } from '../db/store.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { heldByOrderingKey } from './flow-store.js';
import { leasedAt, unindexedVisibleAt } from './visibility-store.js';
import type { DeliveryRow, MessageRow } from './store.js';

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
    // Newest first in the order of messages_retention (state, created_at), or of one inbox messages_inbox_time: a page stops after its rows.
    return this.paginate(tx, query, window, {
      keyset: [
        { column: 'created_at', direction: 'desc', type: 'number' },
        { column: 'seq', direction: 'desc', type: 'number' },
      ],
    });
  }

  /**
   * Messages held by their ordering key: of each key's pending messages (leased or not) all but
   * the first wait. A grouped walk of the partial index messages_ordering (pending keyed messages
   * only), never of the messages table: SQLite, which keeps no statistics, is told the index (it
   * chose messages_retention, a walk of every pending message, at every metrics scrape).
   */
  async countHeldByOrderingKey(tx: Tx): Promise<number> {
    const messages = this.caps.kind === 'sqlite' ? sql`messages indexed by messages_ordering` : sql`messages`;
    // The state a literal, as in the index's own condition: a bound value proves no partial index applies.
    const { rows } = await sql<{ held: number | string | null }>`select sum(n - 1) as held from (
      select count(*) as n from ${messages} where ordering_key is not null and state = 'pending'
      group by destination, ordering_key) as keys`.execute(dbOf(tx, this.db));
    return Number(rows[0]?.held ?? 0);
  }

  /**
   * The inboxes holding messages (pending, leased or dead), by agent id, or the one of
   * `destination`. The list and its total read the counters (a row per agent, kept by triggers);
   * the leased among a page's pending messages and the oldest waiting are read as in `waiting`,
   * never by walking an inbox's waiting messages.
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
    const unseen = await this.invisible(tx, pendingOf, now);
    const oldest = await this.oldestWaiting(tx, pendingOf, now, 'not_leased');
    return {
      ...page,
      items: page.items.map((row) => {
        const leased = unseen.get(row.destination)?.leased ?? 0;
        return {
          destination: row.destination,
          pending: Number(row.pending) - leased,
          leased,
          dead: Number(row.dead),
          oldest_pending_at: oldest.get(row.destination) ?? null,
        };
      }),
    };
  }

  /**
   * Every inbox with messages a receive would take now: how many (pending less those leased,
   * delayed or backing off) and when the oldest of them was sent. O(agents + messages in flight).
   */
  async readyInboxes(tx: Tx, now: number): Promise<{ agent_id: string; depth: number; oldest_at: number }[]> {
    const counters = await dbOf(tx, this.db)
      .selectFrom('inbox_counters')
      .select(['destination', 'pending'])
      .where('pending', '>', 0)
      .execute();
    const unseen = await this.invisible(tx, undefined, now);
    const ready = counters
      .map((row) => ({ agent_id: row.destination, depth: Number(row.pending) - (unseen.get(row.destination)?.invisible ?? 0) }))
      .filter((row) => row.depth > 0);
    const oldest = await this.oldestWaiting(
      tx,
      ready.map((row) => row.agent_id),
      now,
      'visible',
    );
    return ready.map((row) => ({ ...row, oldest_at: oldest.get(row.agent_id) ?? now }));
  }

  /**
   * Per inbox (of `destinations`, or all): its pending messages a receive cannot take now
   * (visible later: leased, delayed or backing off) and how many of them are leased. Reads the
   * range of messages_expiry (state, visible_at) past `now`: the messages in flight, however many
   * wait. The destination is matched as an expression so the planner cannot walk an inbox's
   * waiting messages on messages_inbox instead.
   */
  private async invisible(
    tx: Tx,
    destinations: string[] | undefined,
    now: number,
  ): Promise<Map<string, { invisible: number; leased: number }>> {
    if (destinations?.length === 0) return new Map();
    let query = dbOf(tx, this.db)
      .selectFrom('messages')
      .where('messages.state', '=', 'pending')
      .where('messages.visible_at', '>', now)
      .select((eb) => [
        'messages.destination',
        eb.fn.countAll<number | string>().as('invisible'),
        eb.fn.sum<number | string>(eb.case().when(leasedAt(eb, now)).then(1).else(0).end()).as('leased'),
      ])
      .groupBy('messages.destination');
    if (destinations !== undefined) query = query.where(sql<string>`${sql.ref('messages.destination')} || ''`, 'in', destinations);
    const rows = await query.execute();
    return new Map(rows.map((row) => [row.destination, { invisible: Number(row.invisible), leased: Number(row.leased) }]));
  }

  /**
   * When the oldest message of each inbox that is not leased (or, `visible`, that a receive
   * would take now) was sent: the first such row of messages_inbox_time (destination, state,
   * created_at), a lookup per inbox past only the messages in flight before it.
   */
  private async oldestWaiting(tx: Tx, destinations: string[], now: number, which: 'not_leased' | 'visible'): Promise<Map<string, number>> {
    if (destinations.length === 0) return new Map();
    const rows = await dbOf(tx, this.db)
      .selectFrom('inbox_counters')
      .where('inbox_counters.destination', 'in', destinations)
      .select((eb) => [
        'inbox_counters.destination',
        eb
          .selectFrom('messages')
          .select('messages.created_at')
          .whereRef('messages.destination', '=', 'inbox_counters.destination')
          .where('messages.state', '=', 'pending')
          .where((m) => (which === 'visible' ? m(unindexedVisibleAt, '<=', now) : m.not(leasedAt(m, now))))
          .orderBy('messages.created_at')
          .limit(1)
          .as('oldest'),
      ])
      .execute();
    return new Map(rows.filter((row) => row.oldest !== null).map((row) => [row.destination, Number(row.oldest)]));
  }

  /**
   * A page of the messages of `destination` that wait (pending) or are leased now, in the order
   * receives take them, each with whether its ordering key holds it back.
   */
  async inboxMessages(tx: Tx, destination: string, leased: boolean, now: number, window: Page): Promise<Paged<HeldMessageRow>> {
    const query = dbOf(tx, this.db)
      .selectFrom('messages')
      .selectAll()
      .select(heldByOrderingKey().as('held'))
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

  /**
   * The last `sample` settled deliveries of each agent (outcome, and ms from delivery to its end),
   * and when a capability is given also its last `sample` of that capability (`of_capability`
   * 1), each read backward on an index (message_deliveries_agent, or _agent_capability): a
   * lookup costs at most twice `sample` rows per agent however long its history.
   */
  async deliveryStats(tx: Tx, agents: readonly { agent_id: string; capability?: string }[], sample: number) {
    if (agents.length === 0) return [];
    const db = dbOf(tx, this.db);
    const lastOf = (agentId: string, capability: string | null) => {
      let last = db
        .selectFrom('message_deliveries')
        .select([
          'destination',
          'outcome',
          sql<number>`ended_at - delivered_at`.as('latency'),
          sql<number>`${capability === null ? 0 : 1}`.as('of_capability'),
        ])
        .where('destination', '=', agentId)
        .where('ended_at', 'is not', null);
      if (capability !== null) last = last.where('capability', '=', capability);
      return db.selectFrom(last.orderBy('ended_at', 'desc').limit(sample).as('last')).selectAll();
    };
    const [first, ...rest] = agents.flatMap((agent) =>
      agent.capability === undefined
        ? [lastOf(agent.agent_id, null)]
        : [lastOf(agent.agent_id, agent.capability), lastOf(agent.agent_id, null)],
    );
    return rest.reduce((union, next) => union.unionAll(next), first!).execute();
  }
}
