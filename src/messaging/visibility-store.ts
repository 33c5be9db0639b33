import { sql, type ExpressionBuilder } from 'kysely';
import type { Database } from '../db/schema.js';

/** The SQL of a message's visibility: hidden from the indexes, and leased now. Shared by the claim and the inbox views. */

/**
 * `visible_at` as an expression no index covers. Without statistics and with bound values,
 * SQLite chose messages_expiry (state, visible_at) for an inbox's claim and next-visible
 * lookup: a walk over every pending message of every inbox, then a sort (receive took 10 ms
 * instead of 1 ms beside 50,000 messages pending elsewhere). Hiding visible_at leaves
 * messages_inbox (destination, state, seq), whose order is the dequeue order; PostgreSQL
 * picks that index anyway.
 */
export const unindexedVisibleAt = sql<number>`+${sql.ref('visible_at')}`;

/**
 * A message leased to a receiver now: received, its lease running, its attempt not yet ended
 * (a rejected message backing off is pending again, with its lease time as its retry time).
 */
export function leasedAt(eb: ExpressionBuilder<Database, 'messages'>, now: number) {
  return eb.and([
    eb('messages.state', '=', 'pending'),
    eb(unindexedVisibleAt, '>', now),
    eb.exists(
      eb
        .selectFrom('message_deliveries')
        .select('message_deliveries.attempt')
        .whereRef('message_deliveries.message_id', '=', 'messages.id')
        .whereRef('message_deliveries.attempt', '=', 'messages.deliveries')
        .where('message_deliveries.outcome', 'is', null),
    ),
  ]);
}
