import type { Logger } from 'pino';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { TurnBatch } from '../kernel/turn-batch.js';
import type { DomainMetrics, InboxDepth } from '../kernel/metrics.js';
import type { Notifier } from '../kernel/notifier.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type {
  AuditTrail,
  DeliveryStats,
  EventLog,
  Inbox,
  InboxReadings,
  InboxWaker,
  OutcomeHandlers,
  AgentLimits,
  OutgoingMessage,
  PayloadRef,
  SendRequest,
  SendResult,
  SentMessage,
} from '../kernel/ports.js';
import type { AgentPauses, UsageRecorder, UsageReport } from '../kernel/usage-ports.js';
import type { RateLimiter } from '../kernel/rate-limiter.js';
import { hasActiveSpan, validTraceparent } from '../kernel/tracing.js';
import type { InboxTracing, SendTrace } from './inbox-tracing.js';
import { InboxViews, type DeadLetter, type InboxMessage, type InboxSummary } from './inbox-views.js';
import { InboxWakeups } from './inbox-wakeups.js';
import { waitAndClaim, type InboxWatch } from './receiving.js';

export type { InboxWatch } from './receiving.js';
import { Leases, type Rejected, type Rejection } from './leases.js';
import { checkReceiver, toMessage, type Caller, type Message } from './messages.js';
import { OutcomeDispatch } from './outcomes.js';
import type { PayloadRefs } from './payload-refs.js';
import { DEFAULT_PRIORITY, newMessageRow, type NewMessageRow } from './message-rows.js';
import type { MessagingStore } from './store.js';
import type { ThreadsService } from './threads.js';
import type { InboxViewsStore } from './views-store.js';

export type { DeadLetter, InboxMessage, InboxSummary } from './inbox-views.js';

export const DEFAULT_MAX_DELIVERIES = 5;
export const DEFAULT_VISIBILITY_S = 30;
export const MAX_WAIT_S = 30;
export const MAX_BATCH = 100;
const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
/** A lone send's row, with the reference its message holds (a sender's). */
interface LoneSend {
  row: NewMessageRow;
  hold: OutgoingMessage['payload_ref'];
}

/** Lone sends one INSERT carries at most (one statement of db/bulk-insert.ts). */
const MAX_LONE_SENDS = 500;

/** What an API caller sends: the port's message without the fields the platform sets. */
export type SendInput = Omit<OutgoingMessage, 'source' | 'origin' | 'traceparent'>;

/** A send by an agent or a person through the API (HTTP, MCP, the channel). */
export interface CallerSendRequest {
  /** Who sends: the source of every message. */
  from: Caller;
  messages: readonly SendInput[];
  /** A batch (send-batch): all or nothing, and no message may carry a thread or an idempotency key. */
  batch?: boolean;
  /**
   * The request's `traceparent` header. It is the parent of the request's span when the server
   * traces, and stored on the message as it is when it does not, so the receiver continues the
   * sender's trace either way.
   */
  traceparent?: string;
  /** API sends commit on their own. */
  tx?: never;
}

/** An API caller's messages as the platform sends them: the caller is their source. */
function fromCaller({ from, messages, batch, traceparent }: CallerSendRequest): OutgoingMessage[] {
  if (batch) {
    messages.forEach((input, i) => {
      if (input.thread_id !== undefined)
        throw InvalidRequest.field(`messages.${i}.thread_id`, 'is not supported in batches; send thread messages one at a time');
      if (input.idempotency_key !== undefined) throw InvalidRequest.field(`messages.${i}.idempotency_key`, 'is not supported in batches');
    });
  }
  const source = from.agentId ?? from.actor;
  const stored = batch || hasActiveSpan() ? undefined : validTraceparent(traceparent);
  return messages.map((input) => ({ ...input, source, traceparent: stored }));
}

/**
 * Durable agent inboxes: FIFO per destination, leases with redelivery, reject with backoff,
 * dead letters with every attempt. `send` is the one door for sending, the platform's (the
 * Inbox port) and API callers' alike. What follows a send is in its parts: Leases (receive,
 * settle, reap, with outcome handlers called inside the settling transaction) and InboxViews
 * (numbers, dead letters, delivery stats); tracing wraps them at the seams of InboxTracing.
 * Sessions and threads are `ThreadsService` (threads.ts), topics `SubscriptionsService`.
 */
export class InboxService implements Inbox, DeliveryStats, InboxWaker, InboxReadings {
  private readonly wakeups: InboxWakeups;
  private readonly outcomes = new OutcomeDispatch();
  private readonly leases: Leases;
  private readonly views: InboxViews;
  private pauses: AgentPauses | null = null;
  /**
   * The lone sends of a turn: one INSERT for all of them (`send` says when it takes a
   * transaction), in one transaction with the holds of their offloaded payloads if any has one.
   */
  private readonly loneSends = new TurnBatch<LoneSend, void>(async (sends) => {
    const rows = sends.map((send) => send.row);
    const holds = sends.flatMap((send) => (send.hold === undefined ? [] : [{ ref: send.hold, holder: send.row.id }]));
    if (holds.length === 0) await this.store.insertNew(autocommit, rows);
    else
      await this.store.inTransaction(async (tx) => {
        await this.store.insertNew(tx, rows);
        await this.payloads.hold(tx, holds);
      });
    return sends.map(() => undefined);
  }, MAX_LONE_SENDS);

  constructor(
    private readonly deps: {
      store: MessagingStore;
      viewStore: InboxViewsStore;
      threads: ThreadsService;
      clock: Clock;
      notifier: Notifier;
      limiter: RateLimiter;
      logger: Logger;
      events: EventLog;
      metrics: DomainMetrics;
      audit: AuditTrail;
      tracing: InboxTracing;
      /** Large payloads by reference. */
      payloads: PayloadRefs;
    },
  ) {
    this.wakeups = new InboxWakeups(deps.notifier, deps.logger);
    this.leases = new Leases({ ...deps, outcomes: this.outcomes, wakeups: this.wakeups });
    this.views = new InboxViews({ ...deps, store: deps.viewStore });
  }

  private get store() {
    return this.deps.store;
  }

  private get payloads(): PayloadRefs {
    return this.deps.payloads;
  }

  /**
   * Puts messages into inboxes, in order, with one insert however many. The one place that
   * decides a send's transaction and when its inboxes wake:
   * - with the caller's `tx`, in it; the inboxes wake when it commits (the notifier delivers at
   *   commit, to every node, this one included). A producer's messages carry no thread and no
   *   idempotency key: nothing is checked;
   * - else one message with a thread or an idempotency key (an API send): its checks and its
   *   insert in a transaction of their own; a replay sends nothing and wakes nobody;
   * - else several messages: in a transaction of their own, all or nothing;
   * - else one INSERT, atomic on its own (on PostgreSQL, two round trips fewer), shared with the
   *   other lone sends of the same turn of the event loop (group commit: one statement, one commit);
   *   on PostgreSQL a turn's sends with an ordering key lock their keys first, in a transaction;
   * and without the caller's `tx` the inboxes wake as soon as the send has committed.
   */
  async send(request: SendRequest | CallerSendRequest): Promise<SendResult> {
    if ('from' in request) return this.sendAsSender(request.from, fromCaller(request), request);
    return this.insertAll(request, request.messages, false);
  }

  /**
   * A sender's messages (an API send, a publish): payloads over the inline limit go as artifacts
   * and references it gave are adopted, each held by the message that carries it from the
   * transaction that inserts it. What a failed send or a replay offloaded is deleted at once.
   */
  async sendAsSender(
    sender: Caller,
    messages: readonly OutgoingMessage[],
    request: SendRequest | CallerSendRequest = { messages },
  ): Promise<SendResult> {
    const prepared = await this.payloads.prepare(sender, messages);
    const result = await this.insertAll(request, prepared, true).catch(async (err: unknown) => {
      await this.payloads.discard(messages, prepared);
      throw err;
    });
    if (result.replayed) await this.payloads.discard(messages, prepared);
    return result;
  }

  /** The insert of a send, in the transaction its kind calls for (see `send`), with the holds of its references if `held`. */
  private async insertAll(
    request: SendRequest | CallerSendRequest,
    messages: readonly OutgoingMessage[],
    held: boolean,
  ): Promise<SendResult> {
    const now = this.deps.clock.now();
    const { tx } = request;
    const one = messages.length === 1 ? messages[0]! : null;
    let rows: NewMessageRow[];
    if (tx !== undefined) rows = await this.insert(tx, messages, now, held);
    else if (one !== null && (one.idempotency_key !== undefined || one.thread_id !== undefined)) {
      const checked = await this.sendChecked(one, now, held);
      if (checked.replayed) return { messages: [sent(checked.row.id, iso(checked.row.created_at))], replayed: true };
      rows = [checked.row];
    } else if (one === null) rows = await this.store.inTransaction((own) => this.insert(own, messages, now, held));
    else rows = [await this.sendAlone(one, now, held)];
    this.deps.metrics.messagesSent(rows.map((row) => row.event_name));
    const inboxes = rows.map((row) => row.destination);
    if (tx === undefined || tx === autocommit) this.wakeups.committed(inboxes);
    else await this.wakeups.inTransaction(tx, inboxes);
    const timestamp = iso(now);
    return { messages: rows.map((row) => sent(row.id, timestamp)), replayed: false };
  }

  /** One message with nothing to check: its row joins the other lone sends of this turn in one INSERT. */
  private async sendAlone(message: OutgoingMessage, now: number, held: boolean): Promise<NewMessageRow> {
    const trace = this.deps.tracing.sending([message]);
    try {
      const row = this.newRow(message, now, trace, null);
      await this.loneSends.add({ row, hold: held ? message.payload_ref : undefined });
      return row;
    } finally {
      trace.end();
    }
  }

  /** A send with an idempotency key or to a thread: its checks and the insert in one transaction. */
  private async sendChecked(message: OutgoingMessage, now: number, held: boolean): Promise<{ row: NewMessageRow; replayed: boolean }> {
    const { source, idempotency_key: key } = message;
    return this.store
      .inTransaction(async (tx) => {
        if (key !== undefined) {
          const existing = await this.store.findByIdempotencyKey(tx, source, key);
          if (existing && now - existing.created_at < IDEMPOTENCY_WINDOW_MS) return { row: existing, replayed: true };
          if (existing) await this.store.clearIdempotencyKey(tx, existing.id);
        }
        if (message.thread_id !== undefined) await this.deps.threads.takeTurn(tx, message.thread_id, source, message.destination);
        const [row] = await this.insert(tx, [message], now, held);
        return { row: row!, replayed: false };
      })
      .catch(async (err: unknown) => {
        // Two sends with one idempotency key raced: the loser returns the winner's message.
        if (key !== undefined && this.store.isUniqueViolation(err)) {
          const existing = await this.store.findByIdempotencyKey(autocommit, source, key);
          if (existing) return { row: existing, replayed: true };
        }
        throw err;
      });
  }

  /**
   * Inserts the messages' rows in `tx`, each with the context of its send span (InboxTracing),
   * and if `held` the holds of the references they carry.
   */
  private async insert(
    tx: Tx,
    messages: readonly OutgoingMessage[],
    now: number,
    held: boolean,
    redrivenFrom: string | null = null,
  ): Promise<NewMessageRow[]> {
    const trace = this.deps.tracing.sending(messages);
    try {
      const rows = messages.map((message) => this.newRow(message, now, trace, redrivenFrom));
      await this.store.insertNew(tx, rows);
      if (held)
        await this.payloads.hold(
          tx,
          messages.map((message, i) => ({ ref: message.payload_ref, holder: rows[i]!.id })),
        );
      return rows;
    } finally {
      trace.end();
    }
  }

  private newRow(message: OutgoingMessage, now: number, trace: SendTrace, redrivenFrom: string | null): NewMessageRow {
    if (message.delay_seconds !== undefined && message.delay_seconds < 0) throw InvalidRequest.field('delay_seconds', 'must be ≥ 0');
    const id = newId('msg', now);
    return newMessageRow({
      id,
      traceparent: trace.traceparentFor(message, id),
      source: message.source,
      destination: message.destination,
      event_name: message.event_name,
      payload: message.payload_ref === undefined ? JSON.stringify(message.payload ?? {}) : 'null',
      payload_ref: message.payload_ref === undefined ? null : JSON.stringify(message.payload_ref),
      thread_id: message.thread_id ?? null,
      delivery_semantic: message.delivery_semantic ?? 'at_least_once',
      idempotency_key: message.idempotency_key ?? null,
      visible_at: now + (message.delay_seconds ?? 0) * 1000,
      max_deliveries: message.max_deliveries ?? DEFAULT_MAX_DELIVERIES,
      priority: message.priority ?? DEFAULT_PRIORITY,
      ordering_key: message.ordering_key ?? null,
      fairness_key: message.fairness_key ?? null,
      capability: message.capability ?? null,
      origin_kind: message.origin?.kind ?? null,
      origin_ref: message.origin?.ref ?? null,
      redriven_from: redrivenFrom,
      created_at: now,
    });
  }

  /** Inbox port: withdraws an unsettled message (a cancelled step, a deleted routine). */
  async cancel(tx: Tx, messageId: string, _reason: string): Promise<void> {
    await this.store.cancelPending(tx, messageId);
  }

  async setPayloadField(tx: Tx, messageId: string, field: string, value: unknown): Promise<void> {
    await this.store.setPendingPayloadField(tx, messageId, field, value);
  }

  /** Puts a dead letter back in the inbox as a new message (retry_count 0) linked to it. */
  async redrive(caller: Caller, messageId: string, reason?: string): Promise<Message> {
    const now = this.deps.clock.now();
    const row = await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'message.redrive', resource: { type: 'message', id: messageId } });
      const dead = await this.store.findMessage(tx, messageId);
      if (!dead) throw new NotFound('Message', messageId);
      checkReceiver(caller, dead.destination);
      if (dead.state !== 'dead') throw new Conflict(`Message '${messageId}' is not dead-lettered (${dead.state})`);
      const again: OutgoingMessage = {
        // The redriven copy goes on in the dead letter's trace.
        traceparent: dead.traceparent,
        source: dead.source,
        destination: dead.destination,
        event_name: dead.event_name,
        payload: JSON.parse(dead.payload),
        ...(dead.payload_ref === null ? {} : { payload_ref: JSON.parse(dead.payload_ref) as PayloadRef }),
        thread_id: dead.thread_id ?? undefined,
        delivery_semantic: dead.delivery_semantic,
        max_deliveries: dead.max_deliveries,
        priority: dead.priority,
        ordering_key: dead.ordering_key ?? undefined,
        fairness_key: dead.fairness_key ?? undefined,
        // A producer that listens for redrives hears of the copy's outcome too.
        origin: this.outcomes.keptOrigin(dead),
      };
      const [copy] = await this.insert(tx, [again], now, true, dead.id);
      await this.outcomes.redriven(tx, dead, copy!.id, caller.actor);
      await this.store.settle(tx, [dead.id], { state: 'redriven' });
      await this.deps.events.append(tx, {
        type: 'message.redriven',
        subject: dead.id,
        actor: caller.actor,
        data: { message_id: dead.id, redriven_as: copy!.id, destination: dead.destination },
        reason,
        readers: { agents: [dead.destination] },
      });
      return copy!;
    });
    this.wakeups.committed([row.destination]);
    return (await this.payloads.sign([toMessage({ ...row, seq: 0 })]))[0]!;
  }

  /**
   * Long-polls the inbox: returns at once when messages are visible, else waits up to
   * `waitSeconds` for a notification (a send, a lease running out) or until `signal` aborts.
   */
  async receive(
    caller: Caller,
    agentId: string,
    options: { waitSeconds: number; max: number; visibilitySeconds: number },
    signal: AbortSignal,
    watch?: InboxWatch,
  ): Promise<Message[]> {
    checkReceiver(caller, agentId);
    const parts = { wakeups: this.wakeups, leases: this.leases, store: this.store, clock: this.deps.clock, pauses: this.pauses };
    return this.payloads.sign(await waitAndClaim(parts, caller, agentId, options, signal, watch));
  }

  /**
   * A wake-up registration that lasts over several receives of one consumer (the agent
   * channel's push loop): a send that lands between two receives is not missed, so a receive
   * after one that drained the inbox waits for a wake-up instead of asking the database again.
   * End it with `unwatch`.
   */
  watch(caller: Caller, agentId: string): InboxWatch {
    checkReceiver(caller, agentId);
    return { waiter: this.wakeups.register(agentId), drained: false, leased: false };
  }

  unwatch(watch: InboxWatch): void {
    this.wakeups.unregister(watch.waiter, !watch.drained);
  }

  /** Each settled message's producer hears of it through the handler of its origin kind. */
  /** Where agents' concurrency limits come from (discovery, wired after both exist). */
  limitAgentsBy(limits: AgentLimits): void {
    this.leases.limitAgentsBy(limits);
  }

  routeOutcomesTo(handlers: OutcomeHandlers): void {
    this.outcomes.routeTo(handlers);
  }

  /** Where the usage acknowledgements carry is recorded. */
  recordUsageWith(recorder: UsageRecorder): void {
    this.leases.recordUsageWith(recorder);
  }

  /** Who says which agents are paused: their inboxes hold their messages until they resume. */
  holdPausedWith(pauses: AgentPauses): void {
    this.pauses = pauses;
  }

  /** InboxWaker port: the receivers of these inboxes look again (an agent resumed). */
  wake(agentIds: readonly string[]): void {
    this.wakeups.committed(agentIds);
  }

  wakeAll(): void {
    this.wakeups.committedAll();
  }

  acknowledge(
    caller: Caller,
    ids: string[],
    output?: unknown,
    usage?: ReadonlyMap<string, UsageReport>,
  ): Promise<{ acknowledged: string[] }> {
    return this.leases.acknowledge(caller, ids, output, usage);
  }

  reject(caller: Caller, input: Rejection): Promise<Rejected> {
    return this.leases.reject(caller, input);
  }

  extend(caller: Caller, messageId: string, visibilitySeconds: number): Promise<{ message_id: string; visible_at: string }> {
    return this.leases.extend(caller, messageId, visibilitySeconds);
  }

  /** The reaper's pass (Leases.reap). */
  reap(since: number, expiredSince = since): Promise<number> {
    return this.leases.reap(since, expiredSince);
  }

  listInboxes(caller: Caller, agentId: string | undefined, window: Page): Promise<Paged<InboxSummary>> {
    return this.views.listInboxes(caller, agentId, window);
  }

  /** The inbox gauges of /metrics. */
  depths(): Promise<InboxDepth[]> {
    return this.views.depths();
  }

  /** The held messages gauge of /metrics: pending messages waiting behind an earlier one of their ordering key. */
  heldByOrderingKey(): Promise<number> {
    return this.deps.viewStore.countHeldByOrderingKey(autocommit);
  }

  readyInboxes(now: number): Promise<{ agent_id: string; depth: number; oldest_at: number }[]> {
    return this.views.readyInboxes(now);
  }

  async inboxMessages(caller: Caller, agentId: string, state: 'pending' | 'leased', window: Page): Promise<Paged<InboxMessage>> {
    const page = await this.views.inboxMessages(caller, agentId, state, window);
    return { ...page, items: await this.payloads.sign(page.items) };
  }

  async listDeadLetters(caller: Caller, agentId: string | undefined, window: Page): Promise<Paged<DeadLetter>> {
    const page = await this.views.listDeadLetters(caller, agentId, window);
    return { ...page, items: await this.payloads.sign(page.items) };
  }

  rateLimit(caller: Caller, agentId: string): Promise<{ limit: number; remaining: number; reset_at: string }> {
    return this.views.rateLimit(caller, agentId);
  }

  /** DeliveryStats port. */
  statsFor(tx: Tx, agents: readonly { agent_id: string; capability?: string }[]): ReturnType<InboxViews['statsFor']> {
    return this.views.statsFor(tx, agents);
  }
}

function sent(id: string, timestamp: string): SentMessage {
  return { message_id: id, status: 'sent', timestamp };
}
