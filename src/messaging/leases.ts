import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import { SYSTEM_ACTOR, type AgentLimits, type EventLog, type OriginKind, type UsageRecorder, type UsageReport } from '../kernel/ports.js';
import { spanClock, type InboxTracing } from './inbox-tracing.js';
import type { InboxWakeups } from './inbox-wakeups.js';
import { toMessage, type Caller, type Message } from './messages.js';
import type { OutcomeDispatch } from './outcomes.js';
import type { PayloadRefs } from './payload-refs.js';
import type { MessageRow, MessagingStore } from './store.js';

const MAX_BACKOFF_S = 300;
/** Exhausted leases dead-lettered per reaper transaction. */
const REAP_BATCH = 500;

export interface Rejection {
  message_id: string;
  reason: string;
  requeue?: boolean;
  delay_seconds?: number;
}

export interface Rejected {
  message_id: string;
  status: 'requeued' | 'dead_lettered';
  retry_at: string | null;
}

function usageSource(row: MessageRow) {
  const origin = row.origin_kind === null || row.origin_ref === null ? null : { kind: row.origin_kind as OriginKind, ref: row.origin_ref };
  return { message_id: row.id, agent_id: row.destination, origin };
}

/**
 * A message's life after its send: leased by a receive, then settled — acknowledged,
 * rejected (back to the inbox after a backoff) or dead-lettered, by its receiver or by the
 * reaper when its last lease runs out. Each settlement tells the message's producer
 * (OutcomeDispatch) in the same transaction.
 */
export class Leases {
  private usage: UsageRecorder | null = null;

  constructor(
    private readonly deps: {
      store: MessagingStore;
      clock: Clock;
      events: EventLog;
      metrics: DomainMetrics;
      outcomes: OutcomeDispatch;
      tracing: InboxTracing;
      wakeups: InboxWakeups;
      payloads: PayloadRefs;
    },
  ) {}

  /** How many messages agents may hold leased at once (discovery's capabilities say). */
  private limits: AgentLimits | null = null;
  /** Agents found limited: a settlement of theirs makes room, so their long polls look again. */
  private readonly limited = new Set<string>();

  private get store() {
    return this.deps.store;
  }

  /** Where the usage an acknowledgement carries is recorded (app.ts: the usage domain). */
  recordUsageWith(recorder: UsageRecorder): void {
    this.usage = recorder;
  }

  /** Who says how many messages an agent may hold leased at once (app.ts: discovery's capabilities). */
  limitAgentsBy(limits: AgentLimits): void {
    this.limits = limits;
  }

  /** Leases up to `max` visible messages of `agentId` to `receiver` (one look of a receive). */
  async claim(agentId: string, receiver: string, max: number, visibilitySeconds: number): Promise<Message[]> {
    const { outcomes } = this.deps;
    const lease = { destination: agentId, receiver, max, now: this.deps.clock.now(), leaseMs: visibilitySeconds * 1000 };
    const startTime = spanClock();
    // Producers that follow deliveries hear of them in the claim's transaction.
    const limit = this.limits === null ? null : await this.limits.concurrencyOf(agentId);
    if (limit === null) this.limited.delete(agentId);
    else this.limited.add(agentId);
    const rows = await this.store.claim(
      lease,
      {
        wants: (claimed) => claimed.some((row) => outcomes.hears(row, 'delivered')),
        record: (tx, claimed) => outcomes.emit(tx, claimed, { status: 'delivered' }),
      },
      limit,
    );
    this.deps.tracing.received(agentId, rows, startTime);
    for (const row of rows) if (row.deliveries === 1) this.deps.metrics.messageQueued(row.origin_kind, (lease.now - row.created_at) / 1000);
    return rows.map(toMessage);
  }

  /** Loads messages for settlement, checking ownership: 404 unknown, 403 foreign. */
  private async settleable(tx: Tx, caller: Caller, ids: string[]): Promise<MessageRow[]> {
    const rows = await this.store.findMessages(tx, ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => {
      const row = byId.get(id);
      if (!row) throw new NotFound('Message', id);
      if (!caller.admin && caller.agentId !== row.destination) {
        throw new Forbidden(`Message '${id}' is addressed to '${row.destination}', not to '${caller.agentId}'`);
      }
      if (row.state !== 'pending') throw new Conflict(`Message '${id}' is already settled (${row.state})`);
      if (row.deliveries === 0) throw new Conflict(`Message '${id}' has not been received yet`);
      return row;
    });
  }

  /** `usage`: what the work of some of the messages consumed (by id), recorded in the acknowledge's transaction. */
  async acknowledge(
    caller: Caller,
    ids: string[],
    output?: unknown,
    usage?: ReadonlyMap<string, UsageReport>,
  ): Promise<{ acknowledged: string[] }> {
    if (new Set(ids).size !== ids.length) throw InvalidRequest.field('message_ids', 'must not repeat an id');
    const recorder = usage === undefined || usage.size === 0 ? null : this.usage;
    if (recorder === null && usage !== undefined && usage.size > 0) throw InvalidRequest.field('usage', 'is not recorded by this server');
    const reports = (rows: MessageRow[]) =>
      rows.flatMap((row) => (usage?.has(row.id) ? [{ source: usageSource(row), usage: usage.get(row.id)! }] : []));
    const now = this.deps.clock.now();
    const startTime = spanClock();
    // Offloaded before the transaction: an output over the inline limit is kept as an artifact of
    // the receiver, its reference on the message and in the outcome.
    const outputRef = output === undefined ? null : await this.deps.payloads.offloadOutput(caller, output, []);
    const outputText = output === undefined || outputRef !== null ? null : JSON.stringify(output);
    const rows = await this.store.inTransaction(async (tx) => {
      // The update checks what `settleable` checks, so the common case reads nothing first;
      // an id it left alone is asked about to say why, and the whole batch rolls back.
      const destination = caller.admin ? null : caller.agentId;
      const acked = destination === undefined ? [] : await this.store.acknowledgeReceived(tx, ids, destination, outputText, now);
      const byId = new Map(acked.map((row) => [row.id, row]));
      const refused = ids.find((id) => !byId.has(id));
      if (refused !== undefined) {
        await this.settleable(tx, caller, [refused]);
        throw new Conflict(`Message '${refused}' cannot be acknowledged now`);
      }
      const rows = ids.map((id) => byId.get(id)!);
      if (outputRef !== null) {
        await this.store.settle(tx, ids, { output_ref: JSON.stringify(outputRef) });
        await this.deps.payloads.hold(
          tx,
          ids.map((id) => ({ ref: outputRef, holder: id })),
        );
      }
      if (recorder !== null) await recorder.record(tx, reports(rows));
      const outcome = { status: 'acknowledged' as const, output, ...(outputRef === null ? {} : { output_ref: outputRef }) };
      await this.deps.tracing.settling(rows, 'ack', () => this.deps.outcomes.emit(tx, rows, outcome), startTime);
      return rows;
    });
    // The producers (the messages' senders) read it.
    if (outputRef !== null) await this.deps.payloads.share(caller, outputRef, [...new Set(rows.map((row) => row.source))]);
    if (recorder !== null) recorder.committed(reports(rows));
    this.deps.metrics.messagesSettled(
      'acked',
      rows.map((row) => row.event_name),
    );
    this.released(rows);
    return { acknowledged: ids };
  }

  /**
   * Rejects a received message: back to the inbox after exponential backoff (1 s, 2 s, 4 s …
   * capped at 5 min, or `delay_seconds`), or dead-lettered when `requeue` is false or no
   * delivery is left.
   */
  async reject(caller: Caller, input: Rejection): Promise<Rejected> {
    const now = this.deps.clock.now();
    // Its lease ends either way (room for a limited agent); a dead letter also releases its ordering key.
    let ended: MessageRow | undefined;
    const rejected = await this.store.inTransaction(async (tx) => {
      const [row] = await this.settleable(tx, caller, [input.message_id]);
      ended = row;
      const requeue = input.requeue !== false && row!.deliveries < row!.max_deliveries;
      return this.deps.tracing.settling([row!], requeue ? 'reject' : 'dead_letter', async () => {
        await this.store.endAttempts(tx, [row!], 'rejected', input.reason, now);
        if (!requeue) {
          const reason = input.requeue === false ? input.reason : `${input.reason} (after ${row!.deliveries} deliveries)`;
          await this.deadLetter(tx, row!, reason, now, caller.actor);
          return { message_id: row!.id, status: 'dead_lettered' as const, retry_at: null };
        }
        const delay = input.delay_seconds ?? Math.min(MAX_BACKOFF_S, 2 ** (row!.deliveries - 1));
        const retryAt = now + delay * 1000;
        await this.store.settle(tx, [row!.id], { visible_at: retryAt });
        this.deps.metrics.messagesSettled('rejected', [row!.event_name]);
        return { message_id: row!.id, status: 'requeued' as const, retry_at: iso(retryAt) };
      });
    });
    if (ended) this.released([ended]);
    return rejected;
  }

  /**
   * Messages settled for good: the next message of each one's ordering key, or of a limited
   * agent, may be received now, so the long polls of their inboxes (on every node) look again.
   */
  private released(rows: Pick<MessageRow, 'destination' | 'ordering_key'>[]): void {
    const inboxes = rows.filter((row) => row.ordering_key !== null || this.limited.has(row.destination)).map((row) => row.destination);
    if (inboxes.length > 0) this.deps.wakeups.committed(inboxes);
  }

  private async deadLetter(tx: Tx, row: MessageRow, reason: string, now: number, actor: string): Promise<void> {
    await this.store.settle(tx, [row.id], { state: 'dead', dead_reason: reason, dead_at: now });
    this.deps.metrics.messagesSettled('dead_lettered', [row.event_name]);
    // Logged before what its producer makes of it (a step failed), in the order they happened.
    await this.deps.events.append(tx, {
      type: 'message.dead_lettered',
      subject: row.id,
      actor,
      data: { message: toMessage({ ...row, state: 'dead' }), reason, dead_at: iso(now) },
      // An agent never sees another agent's inbox: only the destination (and admins) read it.
      readers: { agents: [row.destination] },
    });
    await this.deps.outcomes.emit(tx, [row], { status: 'dead_lettered', reason });
  }

  async extend(caller: Caller, messageId: string, visibilitySeconds: number): Promise<{ message_id: string; visible_at: string }> {
    const now = this.deps.clock.now();
    return this.store.inTransaction(async (tx) => {
      const [row] = await this.settleable(tx, caller, [messageId]);
      if (row!.visible_at <= now) throw new Conflict(`The lease of message '${messageId}' has expired; receive it again`);
      const until = now + visibilitySeconds * 1000;
      await this.store.extendLease(tx, messageId, until);
      return { message_id: messageId, visible_at: iso(until) };
    });
  }

  /**
   * The reaper's pass: dead-letters leased messages whose last lease ran out since
   * `expiredSince` with no delivery left, and wakes long polls of inboxes where delayed or
   * backed-off messages became visible since `since` (the previous pass).
   */
  async reap(since: number, expiredSince = since): Promise<number> {
    const now = this.deps.clock.now();
    let reaped = 0;
    const dead: MessageRow[] = [];
    for (let batch = REAP_BATCH; batch === REAP_BATCH;) {
      batch = await this.store.inTransaction(async (tx) => {
        const exhausted = await this.store.claimExhausted(tx, expiredSince, now, REAP_BATCH);
        dead.push(...exhausted.filter((row) => row.ordering_key !== null));
        for (const row of exhausted) {
          await this.deps.tracing.settling([row], 'dead_letter', async () => {
            await this.store.endAttempts(tx, [row], 'expired', 'visibility timeout expired', now);
            await this.deadLetter(tx, row, `visibility timeout expired after ${row.deliveries} deliveries`, now, SYSTEM_ACTOR);
          });
        }
        return exhausted.length;
      });
      reaped += batch;
    }
    this.released(dead);
    this.deps.wakeups.committed(await this.store.destinationsBecomingVisible(autocommit, since, now));
    return reaped;
  }
}
