import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import { StagedPayload, SYSTEM_ACTOR, type AgentLimits, type EventLog, type OriginKind, type PayloadRef } from '../kernel/ports.js';
import { type UsageRecorder, type UsageReport } from '../kernel/usage-ports.js';
import { TurnBatch } from '../kernel/turn-batch.js';
import { spanClock, type InboxTracing } from './inbox-tracing.js';
import type { InboxWakeups } from './inbox-wakeups.js';
import { toMessage, type Caller, type Message } from './messages.js';
import type { OutcomeDispatch } from './outcomes.js';
import type { PayloadRefs } from './payload-refs.js';
import type { UnheardAck } from './inboxes-store.js';
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

/** The usage reports of the acknowledged `rows` that `usage` has one for. */
function usageReports(rows: readonly MessageRow[], usage: ReadonlyMap<string, UsageReport>) {
  return rows.flatMap((row) => (usage.has(row.id) ? [{ source: usageSource(row), usage: usage.get(row.id)! }] : []));
}

/** One acknowledge call: `stored` is its output as stored (JSON text, null when by reference), `usage` by message id. */
interface AckCall {
  caller: Caller;
  ids: string[];
  output: unknown;
  outputRef: PayloadRef | null;
  stored: string | null;
  usage: ReadonlyMap<string, UsageReport> | null;
  startTime: number;
}

interface RejectCall {
  caller: Caller;
  input: Rejection;
}

/** The inbox a caller settles messages of: its own, or any for an admin (''). */
const inboxOf = (caller: Caller): string => (caller.admin ? '' : (caller.agentId ?? ''));
const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Acknowledge (or reject) calls one transaction carries at most. */
const MAX_ACK_CALLS = 100;
/** Inboxes `Leases.heardInboxes` keeps at most. */
const HEARD_INBOXES = 10_000;

/**
 * A message's life after its send: leased by a receive, then settled — acknowledged,
 * rejected (back to the inbox after a backoff) or dead-lettered, by its receiver or by the
 * reaper when its last lease runs out. Each settlement tells the message's producer
 * (OutcomeDispatch) in the same transaction.
 */
export class Leases {
  private usage: UsageRecorder | null = null;
  /** The rejections of a turn: one transaction for all of them, each rejected in turn. */
  private readonly rejects = new TurnBatch<RejectCall, { rejected: Rejected; row: MessageRow }>(
    (calls) =>
      this.store.inTransaction(async (tx) => {
        // In inbox order, as acknowledgements are (acknowledgeIn), answered in the calls' order.
        const byInbox = [...calls.keys()].sort((a, b) => compareText(inboxOf(calls[a]!.caller), inboxOf(calls[b]!.caller)));
        const answers = new Array<{ rejected: Rejected; row: MessageRow }>(calls.length);
        for (const i of byInbox) answers[i] = await this.rejectIn(tx, calls[i]!);
        return answers;
      }),
    MAX_ACK_CALLS,
  );
  /**
   * Acknowledgements of one message each, without an output, by an agent whose inbox has not
   * been leased a message a producer hears of, with usage only when no budget counts it: one
   * statement for the turn's, with their usage records, outside any transaction
   * (`acknowledgeUnheard`). Answers null for a message it left alone (settled, not the caller's,
   * or heard of after all, or a second ack of it in the turn), which then goes the way of `acks`,
   * where it is acknowledged or refused with its reason. The agent channel acks as
   * it is pushed, a message at a time: BEGIN and COMMIT around each ack were two of its five
   * statements per message (W1 on PostgreSQL).
   */
  private readonly unheardAcks = new TurnBatch<UnheardAck, MessageRow | null>(async (acks) => {
    const byId = new Map((await this.store.acknowledgeUnheard(acks, this.deps.clock.now())).map((row) => [row.id, row]));
    return acks.map((ack) => {
      const row = byId.get(ack.id) ?? null;
      byId.delete(ack.id);
      return row;
    });
  }, MAX_ACK_CALLS);
  /** Inboxes that were leased a message whose producer hears of its acknowledgement (bounded: cleared past HEARD_INBOXES). */
  private readonly heardInboxes = new Set<string>();
  /** The acknowledgements of a turn: one transaction for all of them. */
  private readonly acks = new TurnBatch<AckCall, MessageRow[]>(
    (calls) => this.store.inTransaction((tx) => this.acknowledgeIn(tx, calls)),
    MAX_ACK_CALLS,
  );

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
    if (rows.some((row) => outcomes.hears(row, 'acknowledged'))) {
      if (this.heardInboxes.size >= HEARD_INBOXES) this.heardInboxes.clear();
      this.heardInboxes.add(agentId);
    }
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

  /**
   * `usage`: what the work of some of the messages consumed (by id), recorded in the
   * acknowledge's transaction. The acknowledgements of one turn of the event loop share that
   * transaction (`acks`), each still all or nothing on its own.
   */
  async acknowledge(
    caller: Caller,
    ids: string[],
    output?: unknown,
    usage?: ReadonlyMap<string, UsageReport>,
  ): Promise<{ acknowledged: string[] }> {
    if (new Set(ids).size !== ids.length) throw InvalidRequest.field('message_ids', 'must not repeat an id');
    const reported = usage !== undefined && usage.size > 0 ? usage : null;
    if (reported !== null && this.usage === null) throw InvalidRequest.field('usage', 'is not recorded by this server');
    // Offloaded before the transaction: an output over the inline limit is kept as an artifact of
    // the receiver, its reference on the message and in the outcome (deleted if the ack fails).
    const outputRef = output === undefined ? null : await this.deps.payloads.offload(caller, output, []);
    const ack = async () =>
      this.acks.add({
        caller,
        ids,
        output: output instanceof StagedPayload ? await this.producersCopy(ids, outputRef!) : output,
        outputRef,
        stored: output === undefined || outputRef !== null ? null : JSON.stringify(output),
        usage: reported,
        startTime: spanClock(),
      });
    const rows =
      (await this.acknowledgedUnheard(caller, ids, output, reported)) ??
      (await ack().catch(async (err: unknown) => {
        if (outputRef !== null) await this.deps.payloads.discardUnheld(outputRef);
        throw err;
      }));
    // The producers (the messages' senders) read it.
    if (outputRef !== null) await this.deps.payloads.share(caller, outputRef, [...new Set(rows.map((row) => row.source))]);
    if (reported !== null) this.usage!.committed(usageReports(rows, reported));
    this.deps.metrics.messagesSettled(
      'acked',
      rows.map((row) => row.event_name),
    );
    this.released(rows);
    return { acknowledged: ids };
  }

  /** The message acknowledged by `unheardAcks`, or null when that is not for this call or left it alone. */
  private async acknowledgedUnheard(
    caller: Caller,
    ids: string[],
    output: unknown,
    usage: ReadonlyMap<string, UsageReport> | null,
  ): Promise<MessageRow[] | null> {
    const destination = caller.admin ? null : caller.agentId;
    if (ids.length !== 1 || output !== undefined || destination === null) return null;
    if (!this.store.acksInOneStatement || this.heardInboxes.has(destination)) return null;
    const report = usage?.get(ids[0]!);
    const record = report === undefined ? null : this.usage!.plain(destination, report);
    if (usage !== null && (usage.size > 1 || record === null)) return null;
    const startTime = spanClock();
    const row = await this.unheardAcks.add({ id: ids[0]!, destination, usage: record });
    if (row === null) return null;
    await this.deps.tracing.settling([row], 'ack', async () => undefined, startTime);
    return [row];
  }

  /**
   * An output streamed to storage as its body arrived, read back only when a producer keeps the
   * value (a plan step's output for later templates, a routine execution's, an A2A task's): an
   * acknowledgement of a message nobody hears of keeps it out of memory.
   */
  private async producersCopy(ids: string[], ref: PayloadRef): Promise<unknown> {
    const rows = await this.store.findMessages(autocommit, ids);
    return rows.some((row) => this.deps.outcomes.hears(row, 'acknowledged')) ? this.deps.payloads.read(ref) : undefined;
  }

  /**
   * Acknowledges each call's messages in `tx`, its rows in order. Calls to one inbox without an
   * output share one statement; a call with an id that is not acknowledgeable throws, which
   * undoes them all (TurnBatch then asks each call again on its own).
   */
  private async acknowledgeIn(tx: Tx, calls: readonly AckCall[]): Promise<MessageRow[][]> {
    const now = this.deps.clock.now();
    const shared = new Map<string, { calls: AckCall[]; ids: Set<string> }>();
    const statements: Array<{ calls: AckCall[]; ids: Set<string> }> = [];
    for (const call of calls) {
      // An admin's acknowledgements name no inbox (`destination` null): they share with each other.
      const key = call.stored !== null || call.outputRef !== null ? null : inboxOf(call.caller);
      const group = key === null ? undefined : shared.get(key);
      if (group !== undefined && !call.ids.some((id) => group.ids.has(id))) {
        group.calls.push(call);
        for (const id of call.ids) group.ids.add(id);
        continue;
      }
      const own = { calls: [call], ids: new Set(call.ids) };
      statements.push(own);
      if (key !== null) shared.set(key, own);
    }
    // Inboxes in one order in every transaction: each statement moves its inbox's counter row
    // (inbox_counters), and two batches taking them in opposite orders deadlocked on PostgreSQL.
    statements.sort((a, b) => compareText(inboxOf(a.calls[0]!.caller), inboxOf(b.calls[0]!.caller)));
    const answers = new Map<AckCall, MessageRow[]>();
    for (const { calls: sharing, ids } of statements) {
      const { caller, stored } = sharing[0]!;
      // The update checks what `settleable` checks, so the common case reads nothing first;
      // an id it left alone is asked about to say why.
      const destination = caller.admin ? null : caller.agentId;
      const acked = destination === undefined ? [] : await this.store.acknowledgeReceived(tx, [...ids], destination, stored, now);
      const byId = new Map(acked.map((row) => [row.id, row]));
      for (const call of sharing) {
        const refused = call.ids.find((id) => !byId.has(id));
        if (refused !== undefined) {
          await this.settleable(tx, call.caller, [refused]);
          throw new Conflict(`Message '${refused}' cannot be acknowledged now`);
        }
        answers.set(
          call,
          call.ids.map((id) => byId.get(id)!),
        );
      }
    }
    for (const call of calls) {
      if (call.outputRef === null) continue;
      await this.store.settle(tx, call.ids, { output_ref: JSON.stringify(call.outputRef) });
      await this.deps.payloads.hold(
        tx,
        call.ids.map((id) => ({ ref: call.outputRef!, holder: id })),
      );
    }
    const rows = calls.flatMap((call) => answers.get(call)!);
    const reports = calls.flatMap((call) => (call.usage === null ? [] : usageReports(answers.get(call)!, call.usage)));
    if (reports.length > 0) await this.usage!.record(tx, reports);
    const outcomes = new Map(
      calls.flatMap((call) => {
        const outcome = {
          status: 'acknowledged' as const,
          output: call.output,
          ...(call.outputRef === null ? {} : { output_ref: call.outputRef }),
        };
        return answers.get(call)!.map((row) => [row.id, outcome] as const);
      }),
    );
    await this.deps.tracing.settling(
      rows,
      'ack',
      () => this.deps.outcomes.emit(tx, rows, (row) => outcomes.get(row.id)!),
      calls[0]!.startTime,
    );
    return calls.map((call) => answers.get(call)!);
  }

  /**
   * Rejects a received message: back to the inbox after exponential backoff (1 s, 2 s, 4 s …
   * capped at 5 min, or `delay_seconds`), or dead-lettered when `requeue` is false or no
   * delivery is left.
   */
  async reject(caller: Caller, input: Rejection): Promise<Rejected> {
    const { rejected, row } = await this.rejects.add({ caller, input });
    this.deps.metrics.messagesSettled(rejected.status === 'requeued' ? 'rejected' : 'dead_lettered', [row.event_name]);
    // Its lease ends either way (room for a limited agent); a dead letter also releases its ordering key.
    this.released([row]);
    return rejected;
  }

  /** Rejects one message in `tx` (the rejections of a turn share it: `rejects`). */
  private async rejectIn(tx: Tx, { caller, input }: RejectCall): Promise<{ rejected: Rejected; row: MessageRow }> {
    const now = this.deps.clock.now();
    const [row] = await this.settleable(tx, caller, [input.message_id]);
    const requeue = input.requeue !== false && row!.deliveries < row!.max_deliveries;
    const rejected = await this.deps.tracing.settling([row!], requeue ? 'reject' : 'dead_letter', async () => {
      await this.store.endAttempts(tx, [row!], 'rejected', input.reason, now);
      if (!requeue) {
        const reason = input.requeue === false ? input.reason : `${input.reason} (after ${row!.deliveries} deliveries)`;
        await this.deadLetter(tx, row!, reason, now, caller.actor);
        return { message_id: row!.id, status: 'dead_lettered' as const, retry_at: null };
      }
      const delay = input.delay_seconds ?? Math.min(MAX_BACKOFF_S, 2 ** (row!.deliveries - 1));
      const retryAt = now + delay * 1000;
      await this.store.settle(tx, [row!.id], { visible_at: retryAt });
      return { message_id: row!.id, status: 'requeued' as const, retry_at: iso(retryAt) };
    });
    return { rejected, row: row! };
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
      const exhausted = await this.store.inTransaction(async (tx) => {
        const exhausted = await this.store.claimExhausted(tx, expiredSince, now, REAP_BATCH);
        for (const row of exhausted) {
          await this.deps.tracing.settling([row], 'dead_letter', async () => {
            await this.store.endAttempts(tx, [row], 'expired', 'visibility timeout expired', now);
            await this.deadLetter(tx, row, `visibility timeout expired after ${row.deliveries} deliveries`, now, SYSTEM_ACTOR);
          });
        }
        return exhausted;
      });
      batch = exhausted.length;
      reaped += batch;
      dead.push(...exhausted);
    }
    // Counted once committed: a transaction that fails counts nothing.
    this.deps.metrics.messagesSettled(
      'dead_lettered',
      dead.map((row) => row.event_name),
    );
    this.released(dead);
    this.deps.wakeups.committed(await this.store.destinationsBecomingVisible(autocommit, since, now));
    return reaped;
  }
}
