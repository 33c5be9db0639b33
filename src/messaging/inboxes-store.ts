import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { Statements } from '../db/statements.js';
import type { PlainUsageRecord } from '../kernel/usage-ports.js';
import { heldByOrderingKey } from './flow-store.js';
import type { MessageRow } from './message-rows.js';

/** A claim's values (store.ts `leaseValues`): what one inbox's lease takes. */
export interface InboxLease {
  destination: string;
  receiver: string;
  max: number;
  now: number;
  visibleAt: number;
}

/**
 * PostgreSQL: the claims of several inboxes, one lease each, as one statement, each inbox's part
 * chosen as store.ts `claimInOneStatement` chooses it (priority, fairness rank, arrival; held
 * ordering keys skipped; rows other claims hold skipped). The claims of one turn follow the
 * wake-ups of one INSERT of sends; each was a statement and a commit of its own, the costliest
 * thing a pushed message did on the database (W1 over the agent channel). Rows come grouped by
 * inbox, in dequeue order within each. The attempts a redelivery ends are found by id (a join
 * with `claimed`, which the planner takes for up to 100 rows per inbox, walked every attempt), and
 * are those still open: the snapshot the CTEs share does not see the ones `attempts` inserts.
 */
export async function claimInboxes(db: Db, statements: Statements, leases: readonly InboxLease[]): Promise<MessageRow[]> {
  const values = {
    inboxes: leases.map((lease) => lease.destination),
    maxes: leases.map((lease) => lease.max),
    receivers: leases.map((lease) => lease.receiver),
    visibleAts: leases.map((lease) => lease.visibleAt),
    // The latest: the statement runs after every claim of the turn asked.
    now: Math.max(...leases.map((lease) => lease.now)),
    pending: 'pending' as const,
    expired: 'expired' as const,
    reason: 'visibility timeout expired',
  };
  const query = statements.compiled(
    'claim-inboxes',
    values,
    (v) => sql<MessageRow>`with picked as (select m.seq, r.receiver, r.visible_at
        from unnest(cast(${v.inboxes} as text[]), cast(${v.maxes} as int[]), cast(${v.receivers} as text[]), cast(${v.visibleAts} as bigint[]))
          as r(inbox, most, receiver, visible_at)
        cross join lateral (select seq from messages
          where destination = r.inbox and state = ${v.pending} and +visible_at <= ${v.now} and deliveries < max_deliveries
            and (ordering_key is null or not ${heldByOrderingKey()})
          order by priority desc, fair_rank, seq limit r.most for update skip locked) m),
      claimed as (update messages set state = case when delivery_semantic = 'at_most_once' then 'delivered' else 'pending' end,
          visible_at = picked.visible_at, retry_count = deliveries, deliveries = deliveries + 1, delivered_at = ${v.now},
          receiver = picked.receiver
        from picked where messages.seq = picked.seq returning messages.*),
      attempts as (insert into message_deliveries (message_id, attempt, receiver, destination, delivered_at, capability)
        select id, deliveries, receiver, destination, cast(${v.now} as bigint), capability from claimed returning message_id),
      ended as (update message_deliveries set outcome = ${v.expired}, reason = ${v.reason}, ended_at = ${v.now}
        where message_deliveries.message_id = any(array(select id from claimed where deliveries > 1))
          and message_deliveries.outcome is null returning message_deliveries.message_id)
      select * from claimed order by destination, priority desc, fair_rank, seq`,
  );
  return (await db.executeQuery(query)).rows;
}

/** An acknowledgement `acknowledgeUnheard` takes: a message, its inbox, and the usage its work reported. */
export interface UnheardAck {
  id: string;
  destination: string;
  usage: PlainUsageRecord | null;
}

/**
 * PostgreSQL: acknowledges each of `acks` that is pending, delivered, addressed to its
 * `destination` and has no origin (no producer hears of it), ending its attempt and inserting the
 * usage record it carries: one statement outside any transaction, for messages of several
 * inboxes. Returns the rows it acknowledged. The records are the usage domain's
 * (`UsageRecorder.plain`: nothing else is done for them), written here so that an acknowledgement
 * and its usage stay one statement.
 */
export async function acknowledgeUnheard(db: Db, statements: Statements, acks: readonly UnheardAck[], now: number): Promise<MessageRow[]> {
  const [ids, destinations] = [acks.map((ack) => ack.id), acks.map((ack) => ack.destination)];
  const usage = acks.flatMap((ack) => (ack.usage === null ? [] : [{ ...ack.usage, message_id: ack.id }]));
  const column = <K extends keyof (typeof usage)[number]>(key: K) => usage.map((record) => record[key]);
  const values = {
    ids,
    destinations,
    now,
    pending: 'pending' as const,
    acked: 'acked' as const,
    never: 0,
    usageIds: column('id'),
    messageIds: column('message_id'),
    models: column('model'),
    providers: column('provider'),
    inputs: column('input_tokens'),
    outputs: column('output_tokens'),
    cached: column('cached_tokens'),
    costs: column('cost_usd'),
    recordedAt: column('recorded_at'),
  };
  // State and destination are compared as expressions no index covers (store.ts `unindexedState`).
  const query = statements.compiled(
    'ack-unheard',
    values,
    (v) => sql<MessageRow>`with acked as (update messages set state = ${v.acked}, acked_at = ${v.now}, output = null
        from unnest(cast(${v.ids} as text[]), cast(${v.destinations} as text[])) as w(ack_id, inbox)
        where messages.id = w.ack_id and (messages.state || '') = ${v.pending} and messages.deliveries > ${v.never}
          and (messages.destination || '') = w.inbox and messages.origin_kind is null returning messages.*),
        ended as (update message_deliveries set outcome = ${v.acked}, reason = null, ended_at = ${v.now} from acked
          where message_deliveries.message_id = acked.id and message_deliveries.attempt = acked.deliveries returning 1),
        used as (insert into usage_records (id, agent_id, model, provider, input_tokens, output_tokens, cached_tokens, cost_usd,
            message_id, recorded_at)
          select u.id, acked.destination, u.model, u.provider, u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_usd,
            acked.id, u.recorded_at
          from unnest(cast(${v.usageIds} as text[]), cast(${v.messageIds} as text[]), cast(${v.models} as text[]),
            cast(${v.providers} as text[]), cast(${v.inputs} as bigint[]), cast(${v.outputs} as bigint[]),
            cast(${v.cached} as bigint[]), cast(${v.costs} as double precision[]), cast(${v.recordedAt} as bigint[]))
            as u(id, message_id, model, provider, input_tokens, output_tokens, cached_tokens, cost_usd, recorded_at)
          join acked on acked.id = u.message_id returning 1)
        select * from acked`,
  );
  return (await db.executeQuery(query)).rows;
}
