import { sql } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import type { MessageRow, NewMessageRow } from './message-rows.js';

/**
 * The SQL of messages' flow control: ordering keys (one message of a key in flight per inbox,
 * in send order) and fairness keys (equal priorities take keys in turn).
 */

/**
 * Whether the message in scope as `messages` waits behind another pending message of its
 * ordering key and inbox sent before it (not settled yet, leased or not). Sends of a key commit
 * in seq order (`orderingLocks`), so no later message of the key can be leased while an
 * earlier one is pending, and the earliest pending one is the only one free. A correlated probe
 * of messages_ordering, one index seek on seq, evaluated in the claim's own statement, so no
 * per-message round trip: concurrent claims on PostgreSQL all see the earlier message pending
 * and leave the later ones, and SKIP LOCKED keeps two from leasing the same head.
 */
export function heldByOrderingKey() {
  return sql<boolean>`exists (select 1 from messages as held
    where held.destination = messages.destination and held.ordering_key = messages.ordering_key
    and held.state = 'pending' and held.seq < messages.seq)`;
}

/**
 * The transaction locks new messages' insert takes before it draws their seq (BulkInsert's
 * `locks`): one per (destination, ordering key) of `rows`, sorted so two inserts never wait on
 * each other in a cycle. A later send of a key waits for the earlier one's commit, so its seq
 * is higher and every snapshot that sees it sees the earlier one too. Without it, a later send
 * committing first was leased ahead of an earlier one still uncommitted, and a concurrent claim
 * could then lease that earlier one beside it. None on SQLite, whose single writer commits
 * sends in seq order.
 */
export function orderingLocks(caps: DialectCapabilities, rows: readonly NewMessageRow[]): string[] {
  if (caps.kind !== 'postgres') return [];
  const names = new Set<string>();
  for (const row of rows) if (row.ordering_key !== null) names.add(`ordering:${row.destination}:${row.ordering_key}`);
  return [...names].sort();
}

/** Sorts claimed rows as the claim chose them: priority (higher first), fairness rank, arrival. */
export function inDequeueOrder(a: MessageRow, b: MessageRow): number {
  return b.priority - a.priority || a.fair_rank - b.fair_rank || a.seq - b.seq;
}

/**
 * Ranks new messages among the pending ones of their fairness key and inbox: the nth waiting
 * message of a key is ranked n, so the dequeue (priority, rank, seq) serves each key's first
 * message before any key's second. One read for the whole batch, and only when a message has a
 * key. Two concurrent sends of one key may draw the same rank: a tie, broken by arrival.
 */
export async function rankByFairness(db: Db, tx: Tx, rows: NewMessageRow[]): Promise<void> {
  const keyed = rows.filter((row) => row.fairness_key !== null);
  if (keyed.length === 0) return;
  const group = (destination: string, key: string) => JSON.stringify([destination, key]);
  const highest = await dbOf(tx, db)
    .selectFrom('messages')
    .select(['destination', 'fairness_key', (eb) => eb.fn.max('fair_rank').as('rank')])
    .where('state', '=', 'pending')
    .where('destination', 'in', [...new Set(keyed.map((row) => row.destination))])
    .where('fairness_key', 'in', [...new Set(keyed.map((row) => row.fairness_key!))])
    .groupBy(['destination', 'fairness_key'])
    .execute();
  const ranks = new Map(highest.map((row) => [group(row.destination, row.fairness_key!), Number(row.rank)]));
  for (const row of keyed) {
    const key = group(row.destination, row.fairness_key!);
    const rank = (ranks.get(key) ?? 0) + 1;
    ranks.set(key, rank);
    row.fair_rank = rank;
  }
}
