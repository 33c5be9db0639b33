import type { Logger } from 'pino';
import { autocommit, type Tx } from '../db/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { DomainMetrics, InboxDepth } from '../kernel/metrics.js';
import type { Notifier } from '../kernel/notifier.js';
import type { Page, Paged } from '../kernel/pagination.js';
import {
  SYSTEM_ACTOR,
  type AuditTrail,
  type DeliveryStats,
  type EventLog,
  type Inbox,
  type MessageOutcome,
  type OriginKind,
  type OutcomeHandler,
  type OutcomeHandlers,
  type OutgoingMessage,
  type SentMessage,
} from '../kernel/ports.js';
import type { RateLimiter, RateLimitState } from '../kernel/rate-limiter.js';
import type { Attributes } from '@opentelemetry/api';
import { contextOf, hasActiveSpan, inSpan, linkTo, SpanKind, traceparentOf, traceparentOfSpan, tracer, validTraceparent, type Span } from '../kernel/tracing.js';
import { InboxWakeups } from './inbox-wakeups.js';
import { checkReceiver, toMessage, type Caller, type Message } from './messages.js';
import { newMessageRow, type DeliveryRow, type InboxCounts, type MessageRow, type MessagingStore, type NewMessageRow } from './store.js';
import type { ThreadsService } from './threads.js';

export const DEFAULT_MAX_DELIVERIES = 5;
export const DEFAULT_VISIBILITY_S = 30;
export const MAX_WAIT_S = 30;
export const MAX_BATCH = 100;
const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
const MAX_BACKOFF_S = 300;
/** Exhausted leases dead-lettered per reaper transaction. */
const REAP_BATCH = 500;
/** Inboxes the depth gauges read per scrape (the top ones are shown, the rest summed). */
const MAX_METRIC_INBOXES = 5000;

export interface Attempt {
  attempt: number;
  receiver: string;
  delivered_at: string;
  outcome: string | null;
  reason: string | null;
  ended_at: string | null;
}

export interface DeadLetter extends Message {
  reason: string | null;
  dead_at: string | null;
  attempts: Attempt[];
}

/** An agent's inbox in numbers (GET /messaging/inboxes). */
export interface InboxSummary {
  agent_id: string;
  pending: number;
  leased: number;
  dead_letters: number;
  oldest_pending_at: string | null;
  oldest_pending_age_seconds: number | null;
}

/** A message looked at in its inbox, without leasing it. */
export interface InboxMessage extends Message {
  visible_at: string;
  deliveries: number;
  max_deliveries: number;
  lease_expires_at: string | null;
  leased_to: string | null;
}

/** What an HTTP caller sends: the port's message without the fields the platform sets. */
export type SendInput = Omit<OutgoingMessage, 'source' | 'origin' | 'traceparent'>;

/** What the OTel messaging conventions put on every span of an inbox. */
const MESSAGING_SYSTEM = 'switchboard';

/**
 * The `send` spans (PRODUCER, OTel messaging conventions) of messages inserted together, whose
 * context each row keeps as `traceparent` for its receiver. A message that carries a trace
 * context of its own (a step's, a routine fire's, a redriven dead letter's) gets a span in that
 * trace; the others share one span, the child of the active one (the request's): a batch send
 * records one span with its message count, not one per message. Without a tracer provider the
 * spans record nothing and each row keeps what its sender gave.
 */
class SendSpans {
  private readonly spans: Span[] = [];
  private shared: string | null | undefined;

  constructor(private readonly messages: readonly OutgoingMessage[]) {}

  traceparentFor(message: OutgoingMessage, id: string): string | null {
    if (message.traceparent || this.messages.length === 1) {
      const span = this.start(message.destination, { 'messaging.message.id': id, 'messaging.message.conversation_id': message.thread_id, 'switchboard.message.event_name': message.event_name }, message.traceparent);
      return traceparentOfSpan(span) ?? message.traceparent ?? null;
    }
    if (this.shared === undefined) {
      const untraced = this.messages.filter((m) => !m.traceparent);
      const destination = untraced.every((m) => m.destination === untraced[0]!.destination) ? untraced[0]!.destination : undefined;
      this.shared = traceparentOfSpan(this.start(destination, { 'messaging.batch.message_count': untraced.length }));
    }
    return this.shared;
  }

  /** Once the insert is done (or failed). */
  end(): void {
    for (const span of this.spans) span.end();
  }

  /** A span named `send {destination}`, or `send` for a batch to several destinations. */
  private start(destination: string | undefined, attributes: Attributes, traceparent?: string | null): Span {
    const span = tracer().startSpan(
      destination === undefined ? 'send' : `send ${destination}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': MESSAGING_SYSTEM,
          'messaging.operation.name': 'send',
          'messaging.operation.type': 'send',
          ...(destination === undefined ? {} : { 'messaging.destination.name': destination }),
          ...attributes,
        },
      },
      traceparent ? contextOf(traceparent) : undefined,
    );
    this.spans.push(span);
    return span;
  }
}

function toAttempt(row: DeliveryRow): Attempt {
  return {
    attempt: row.attempt,
    receiver: row.receiver,
    delivered_at: iso(row.delivered_at),
    outcome: row.outcome,
    reason: row.reason,
    ended_at: iso(row.ended_at),
  };
}

/**
 * Durable agent inboxes (design §4, issue "Messaging"): FIFO per destination, leases with
 * redelivery, reject with backoff, dead letters with every attempt. Also the transport other
 * domains use through the Inbox port, with outcome handlers called inside the transaction that
 * settles a message. Sessions and threads are `ThreadsService` (threads.ts), topics
 * `SubscriptionsService` (subscriptions.ts).
 */
export class InboxService implements Inbox, DeliveryStats {
  /** By origin kind (`messages.origin_kind`), from `routeOutcomesTo`. */
  private outcomeHandlers = new Map<string, OutcomeHandler>();
  private readonly wakeups: InboxWakeups;

  constructor(
    private readonly deps: {
      store: MessagingStore;
      threads: ThreadsService;
      clock: Clock;
      notifier: Notifier;
      limiter: RateLimiter;
      logger: Logger;
      events: EventLog;
      metrics: DomainMetrics;
      audit: AuditTrail;
    },
  ) {
    this.wakeups = new InboxWakeups(deps.notifier, deps.logger);
  }

  private get store() {
    return this.deps.store;
  }

  /** Each settled message's producer hears of it through the handler of its origin kind. */
  routeOutcomesTo(handlers: OutcomeHandlers): void {
    this.outcomeHandlers = new Map(Object.entries(handlers));
  }

  /** Whether the producer of `row` (if any) wants to hear of outcomes like `status`. */
  private hears(row: MessageRow, status: MessageOutcome['status']): row is MessageRow & { origin_kind: OriginKind; origin_ref: string } {
    if (row.origin_kind === null || row.origin_ref === null) return false;
    const handler = this.outcomeHandlers.get(row.origin_kind);
    return handler !== undefined && (status !== 'delivered' || handler.delivered);
  }

  /** Tells each origin's producer what happened to its messages: one call per origin kind. */
  private async emitOutcomes(tx: Tx, rows: MessageRow[], outcome: Omit<MessageOutcome, 'message_id' | 'origin' | 'destination'>) {
    const byKind = new Map<OriginKind, MessageOutcome[]>();
    for (const row of rows) {
      if (!this.hears(row, outcome.status)) continue;
      let batch = byKind.get(row.origin_kind);
      if (!batch) byKind.set(row.origin_kind, (batch = []));
      batch.push({ message_id: row.id, origin: { kind: row.origin_kind, ref: row.origin_ref }, destination: row.destination, ...outcome });
    }
    for (const [kind, outcomes] of byKind) {
      // Producers lock their own rows (a plan run) in the handler: a global order (by origin) keeps
      // two concurrent batches that touch the same runs from deadlocking on PostgreSQL.
      outcomes.sort((a, b) => (a.origin.ref < b.origin.ref ? -1 : a.origin.ref === b.origin.ref ? 0 : 1));
      await this.outcomeHandlers.get(kind)!.handle(tx, outcomes);
    }
  }

  /** A new message's row, its `traceparent` from its send span (see SendSpans). */
  private newRow(message: OutgoingMessage, now: number, spans: SendSpans): NewMessageRow {
    if (message.delay_seconds !== undefined && message.delay_seconds < 0) throw InvalidRequest.field('delay_seconds', 'must be ≥ 0');
    const id = newId('msg', now);
    return newMessageRow({
      id,
      traceparent: spans.traceparentFor(message, id),
      source: message.source,
      destination: message.destination,
      event_name: message.event_name,
      payload: JSON.stringify(message.payload ?? {}),
      thread_id: message.thread_id ?? null,
      delivery_semantic: message.delivery_semantic ?? 'at_least_once',
      idempotency_key: message.idempotency_key ?? null,
      visible_at: now + (message.delay_seconds ?? 0) * 1000,
      max_deliveries: message.max_deliveries ?? DEFAULT_MAX_DELIVERIES,
      origin_kind: message.origin?.kind ?? null,
      origin_ref: message.origin?.ref ?? null,
      created_at: now,
    });
  }

  /** Inbox port: a platform sender puts work into an agent's inbox, inside the caller's transaction. */
  async send(tx: Tx, message: OutgoingMessage): Promise<SentMessage> {
    const now = this.deps.clock.now();
    const spans = new SendSpans([message]);
    const row = this.newRow(message, now, spans);
    await this.store.insertMessages(tx, [row]).finally(() => spans.end());
    this.deps.metrics.messagesSent([row.event_name]);
    // Under autocommit the message is in: its inbox wakes now, not at a caller's commit.
    if (tx === autocommit) this.wakeups.committed([row.destination]);
    else await this.wakeups.inTransaction(tx, [row.destination]);
    return { message_id: row.id, status: 'sent', timestamp: iso(now) };
  }

  /** Inbox port: several messages in the caller's transaction (a scheduler's batch of fires). */
  async sendMany(tx: Tx, messages: OutgoingMessage[]): Promise<SentMessage[]> {
    if (messages.length === 0) return [];
    const now = this.deps.clock.now();
    const spans = new SendSpans(messages);
    const rows = messages.map((message) => this.newRow(message, now, spans));
    await this.store.insertMessages(tx, rows).finally(() => spans.end());
    this.deps.metrics.messagesSent(rows.map((row) => row.event_name));
    await this.wakeups.inTransaction(tx, rows.map((row) => row.destination));
    return rows.map((row) => ({ message_id: row.id, status: 'sent' as const, timestamp: iso(now) }));
  }

  /** Inbox port: withdraws an unsettled message (a cancelled step, a deleted routine). */
  async cancel(tx: Tx, messageId: string, _reason: string): Promise<void> {
    await this.store.cancelPending(tx, messageId);
  }

  /**
   * HTTP send: `source` is the caller; thread rules and idempotency apply. `traceparent` (the
   * request's header) is honoured: it is the parent of the request's span when the server
   * traces, and stored on the message as it is when it does not, so the receiver continues the
   * sender's trace either way.
   */
  async sendAs(caller: Caller, input: SendInput, traceparent?: string): Promise<{ sent: SentMessage; replayed: boolean }> {
    const now = this.deps.clock.now();
    const source = caller.agentId ?? caller.actor;
    const message = { ...input, source, traceparent: hasActiveSpan() ? null : validTraceparent(traceparent) };
    const result = await (input.idempotency_key === undefined && input.thread_id === undefined
      ? this.sendPlain(message, now)
      : this.sendChecked(message, now));
    if (!result.replayed) {
      this.deps.metrics.messagesSent([input.event_name]);
      this.wakeups.committed([input.destination]);
    }
    return {
      sent: { message_id: result.row.id, status: 'sent', timestamp: iso(result.row.created_at) },
      replayed: result.replayed,
    };
  }

  /** One INSERT, atomic on its own: no transaction around it (on PostgreSQL, two round trips fewer). */
  private async sendPlain(message: OutgoingMessage, now: number): Promise<{ row: NewMessageRow; replayed: boolean }> {
    const spans = new SendSpans([message]);
    const row = this.newRow(message, now, spans);
    await this.store.insertMessages(autocommit, [row]).finally(() => spans.end());
    return { row, replayed: false };
  }

  /** A send with an idempotency key or to a thread: its checks and the insert in one transaction. */
  private async sendChecked(input: OutgoingMessage, now: number): Promise<{ row: NewMessageRow; replayed: boolean }> {
    const source = input.source;
    return this.store.inTransaction(async (tx) => {
      if (input.idempotency_key !== undefined) {
        const existing = await this.store.findByIdempotencyKey(tx, source, input.idempotency_key);
        if (existing && now - existing.created_at < IDEMPOTENCY_WINDOW_MS) {
          return { row: existing, replayed: true };
        }
        if (existing) await this.store.clearIdempotencyKey(tx, existing.id);
      }
      if (input.thread_id !== undefined) await this.deps.threads.takeTurn(tx, input.thread_id, source, input.destination);
      const spans = new SendSpans([input]);
      const row = this.newRow(input, now, spans);
      await this.store.insertMessages(tx, [row]).finally(() => spans.end());
      return { row, replayed: false };
    }).catch(async (err: unknown) => {
      // Two sends with one idempotency key raced: the loser returns the winner's message.
      if (input.idempotency_key !== undefined && this.store.isUniqueViolation(err)) {
        const existing = await this.store.findByIdempotencyKey(autocommit, source, input.idempotency_key);
        if (existing) return { row: existing, replayed: true };
      }
      throw err;
    });
  }

  /** All-or-nothing batch send (up to 500). */
  async sendBatchAs(caller: Caller, inputs: SendInput[]): Promise<SentMessage[]> {
    const now = this.deps.clock.now();
    const source = caller.agentId ?? caller.actor;
    inputs.forEach((input, i) => {
      if (input.thread_id !== undefined) throw InvalidRequest.field(`messages.${i}.thread_id`, 'is not supported in batches; send thread messages one at a time');
      if (input.idempotency_key !== undefined) throw InvalidRequest.field(`messages.${i}.idempotency_key`, 'is not supported in batches');
    });
    const ids = await this.sendBatch(
      inputs.map((input) => ({ ...input, source })),
      now,
    );
    const timestamp = iso(now);
    return ids.map((id) => ({ message_id: id, status: 'sent' as const, timestamp }));
  }

  /**
   * Messages sent together, all or nothing, in a transaction of their own (a batch send, a
   * publish); their inboxes' long polls wake after the commit. Returns their ids, in order.
   */
  async sendBatch(messages: OutgoingMessage[], now: number): Promise<string[]> {
    const spans = new SendSpans(messages);
    const rows = messages.map((message) => this.newRow(message, now, spans));
    if (rows.length > 0) await this.store.inTransaction((tx) => this.store.insertMessages(tx, rows)).finally(() => spans.end());
    this.deps.metrics.messagesSent(rows.map((r) => r.event_name));
    this.wakeups.committed(rows.map((r) => r.destination));
    return rows.map((r) => r.id);
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
  ): Promise<Message[]> {
    checkReceiver(caller, agentId);
    const deadline = this.deps.clock.now() + options.waitSeconds * 1000;
    // Registered before the first look, so a send between the look and the wait is not missed.
    const waiter = this.wakeups.register(agentId);
    let full = false;
    try {
      for (;;) {
        const turn = this.wakeups.claimTurn();
        if (turn) await turn;
        // A client gone while its poll waited for a turn gets nothing leased to it.
        if (signal.aborted) return [];
        this.wakeups.rearm(waiter);
        const messages = await this.claim(agentId, caller.actor, options.max, options.visibilitySeconds);
        full = messages.length === options.max;
        const now = this.deps.clock.now();
        if (messages.length > 0 || now >= deadline || signal.aborted) return messages;
        if (waiter.notified) continue;
        const nextVisible = await this.store.nextVisibleAt(autocommit, agentId, now);
        const until = Math.min(deadline, nextVisible ?? deadline);
        await new Promise<void>((resolve) => {
          let settled = false;
          const done = () => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            waiter.wake = null;
            resolve();
          };
          const timer = setTimeout(done, Math.max(0, until - now));
          signal.addEventListener('abort', done, { once: true });
          // Woken after the commit of a write group (db/sqlite-driver.ts on SQLite), which holds
          // every send of its turn: the claim that follows at once takes them all.
          waiter.wake = done;
          // The client may have gone, or a send arrived, while nextVisibleAt was awaited: an abort
          // fired before the listener was added is never heard again.
          if (waiter.notified || signal.aborted) done();
        });
      }
    } finally {
      this.wakeups.unregister(waiter, full);
    }
  }

  private async claim(agentId: string, receiver: string, max: number, visibilitySeconds: number): Promise<Message[]> {
    const lease = { destination: agentId, receiver, max, now: this.deps.clock.now(), leaseMs: visibilitySeconds * 1000 };
    const startTime = performance.timeOrigin + performance.now();
    // Producers that follow deliveries hear of them in the claim's transaction.
    const rows = await this.store.claim(lease, {
      wants: (claimed) => claimed.some((row) => this.hears(row, 'delivered')),
      record: (tx, claimed) => this.emitOutcomes(tx, claimed, { status: 'delivered' }),
    });
    // A `receive` span for the claims that lease something (a long poll's empty looks are not
    // worth one each), linked to each message's send (OTel messaging conventions).
    if (rows.length > 0) {
      tracer().startSpan(`receive ${agentId}`, {
          kind: SpanKind.CONSUMER,
          startTime,
          links: rows.flatMap((row) => linkTo(row.traceparent)),
          attributes: {
            'messaging.system': MESSAGING_SYSTEM,
            'messaging.operation.name': 'receive',
            'messaging.operation.type': 'receive',
            'messaging.destination.name': agentId,
            'messaging.batch.message_count': rows.length,
          },
        })
        .end();
    }
    for (const row of rows) if (row.deliveries === 1) this.deps.metrics.messageQueued(row.origin_kind, (lease.now - row.created_at) / 1000);
    return rows.map(toMessage);
  }

  /**
   * Runs `fn` (a settlement) in a `settle {destination}` span. One message's span is a child of
   * the context stored with it, so its trace goes on even when the agent propagated nothing;
   * the request that settled it is a link. A batch's span is the request's child, linked to
   * each message.
   */
  private settling<T>(rows: MessageRow[], operation: 'ack' | 'reject' | 'dead_letter', fn: () => Promise<T>, startTime?: number): Promise<T> {
    const one = rows.length === 1 ? rows[0]! : null;
    return inSpan(
      `settle ${rows[0]!.destination}`,
      {
        kind: SpanKind.CLIENT,
        startTime,
        parent: one?.traceparent ? contextOf(one.traceparent) : undefined,
        links: one ? linkTo(traceparentOf()) : rows.flatMap((row) => linkTo(row.traceparent)),
        attributes: {
          'messaging.system': MESSAGING_SYSTEM,
          'messaging.operation.name': operation,
          'messaging.operation.type': 'settle',
          'messaging.destination.name': rows[0]!.destination,
          ...(one ? { 'messaging.message.id': one.id, 'messaging.message.delivery_count': one.deliveries } : { 'messaging.batch.message_count': rows.length }),
        },
      },
      fn,
    );
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

  async acknowledge(caller: Caller, ids: string[], output?: unknown): Promise<{ acknowledged: string[] }> {
    if (new Set(ids).size !== ids.length) throw InvalidRequest.field('message_ids', 'must not repeat an id');
    const now = this.deps.clock.now();
    const startTime = performance.timeOrigin + performance.now();
    const rows = await this.store.inTransaction(async (tx) => {
      // The update checks what `settleable` checks, so the common case reads nothing first;
      // an id it left alone is asked about to say why, and the whole batch rolls back.
      const destination = caller.admin ? null : caller.agentId;
      const acked = destination === undefined ? [] : await this.store.acknowledgeReceived(tx, ids, destination, output === undefined ? null : JSON.stringify(output), now);
      const byId = new Map(acked.map((row) => [row.id, row]));
      const refused = ids.find((id) => !byId.has(id));
      if (refused !== undefined) {
        await this.settleable(tx, caller, [refused]);
        throw new Conflict(`Message '${refused}' cannot be acknowledged now`);
      }
      const rows = ids.map((id) => byId.get(id)!);
      await this.settling(rows, 'ack', () => this.emitOutcomes(tx, rows, { status: 'acknowledged', output }), startTime);
      return rows;
    });
    this.deps.metrics.messagesSettled('acked', rows.map((row) => row.event_name));
    return { acknowledged: ids };
  }

  /**
   * Rejects a received message: back to the inbox after exponential backoff (1 s, 2 s, 4 s …
   * capped at 5 min, or `delay_seconds`), or dead-lettered when `requeue` is false or no
   * delivery is left.
   */
  async reject(
    caller: Caller,
    input: { message_id: string; reason: string; requeue?: boolean; delay_seconds?: number },
  ): Promise<{ message_id: string; status: 'requeued' | 'dead_lettered'; retry_at: string | null }> {
    const now = this.deps.clock.now();
    return this.store.inTransaction(async (tx) => {
      const [row] = await this.settleable(tx, caller, [input.message_id]);
      const requeue = input.requeue !== false && row!.deliveries < row!.max_deliveries;
      return this.settling([row!], requeue ? 'reject' : 'dead_letter', async () => {
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
    await this.emitOutcomes(tx, [row], { status: 'dead_lettered', reason });
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

  /** The agent whose inbox a list is about: the one asked for, else the calling agent (an admin: every agent). */
  private inboxOf(caller: Caller, agentId: string | undefined): string | undefined {
    const agent = agentId ?? (caller.admin ? undefined : caller.agentId!);
    if (agent !== undefined) checkReceiver(caller, agent);
    return agent;
  }

  /**
   * The inboxes holding messages, by agent id, in numbers; with `agentId` that agent's inbox,
   * empty or not. An agent sees its own only.
   */
  async listInboxes(caller: Caller, agentId: string | undefined, window: Page): Promise<Paged<InboxSummary>> {
    const agent = this.inboxOf(caller, agentId);
    const now = this.deps.clock.now();
    const page = await this.store.inboxCounts(autocommit, agent, now, window);
    if (agent !== undefined && page.total === 0) {
      const empty = { destination: agent, pending: 0, leased: 0, dead: 0, oldest_pending_at: null };
      return { total: 1, items: window.offset === 0 ? [this.summary(empty, now)] : [] };
    }
    return { total: page.total, items: page.items.map((counts) => this.summary(counts, now)) };
  }

  private summary(counts: InboxCounts, now: number): InboxSummary {
    const oldest = counts.oldest_pending_at;
    return {
      agent_id: counts.destination,
      pending: counts.pending,
      leased: counts.leased,
      dead_letters: counts.dead,
      oldest_pending_at: iso(oldest),
      oldest_pending_age_seconds: oldest === null ? null : Math.max(0, Math.floor((now - oldest) / 1000)),
    };
  }

  /** Every inbox holding messages, deepest first (the inbox gauges of /metrics; at most MAX_METRIC_INBOXES). */
  async depths(): Promise<InboxDepth[]> {
    const now = this.deps.clock.now();
    const page = await this.store.inboxCounts(autocommit, undefined, now, { limit: MAX_METRIC_INBOXES, offset: 0 });
    return page.items
      .map((counts) => {
        const { agent_id, pending, oldest_pending_age_seconds } = this.summary(counts, now);
        return { agent_id, pending, oldest_pending_age_seconds };
      })
      .sort((a, b) => b.pending - a.pending);
  }

  /** Looks at an agent's pending or leased messages, in inbox order; never leases them. */
  async inboxMessages(caller: Caller, agentId: string, state: 'pending' | 'leased', window: Page): Promise<Paged<InboxMessage>> {
    checkReceiver(caller, agentId);
    const leased = state === 'leased';
    const page = await this.store.inboxMessages(autocommit, agentId, leased, this.deps.clock.now(), window);
    return {
      total: page.total,
      items: page.items.map((row) => ({
        ...toMessage(row),
        visible_at: iso(row.visible_at),
        deliveries: row.deliveries,
        max_deliveries: row.max_deliveries,
        lease_expires_at: leased ? iso(row.visible_at) : null,
        leased_to: leased ? row.receiver : null,
      })),
    };
  }

  async listDeadLetters(caller: Caller, agentId: string | undefined, window: Page): Promise<Paged<DeadLetter>> {
    const agent = this.inboxOf(caller, agentId);
    const page = await this.store.listDeadLetters(autocommit, agent, window);
    const attempts = await this.store.attemptsOf(autocommit, page.items.map((r) => r.id));
    return {
      total: page.total,
      items: page.items.map((row) => ({
        ...toMessage(row),
        reason: row.dead_reason,
        dead_at: iso(row.dead_at),
        attempts: attempts.filter((a) => a.message_id === row.id).map(toAttempt),
      })),
    };
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
        thread_id: dead.thread_id ?? undefined,
        delivery_semantic: dead.delivery_semantic,
        max_deliveries: dead.max_deliveries,
      };
      const spans = new SendSpans([again]);
      const copy: NewMessageRow = { ...this.newRow(again, now, spans), redriven_from: dead.id };
      await this.store.insertMessages(tx, [copy]).finally(() => spans.end());
      await this.store.settle(tx, [dead.id], { state: 'redriven' });
      await this.deps.events.append(tx, {
        type: 'message.redriven',
        subject: dead.id,
        actor: caller.actor,
        data: { message_id: dead.id, redriven_as: copy.id, destination: dead.destination },
        reason,
        readers: { agents: [dead.destination] },
      });
      return copy;
    });
    this.wakeups.committed([row.destination]);
    return toMessage({ ...row, seq: 0 });
  }

  /**
   * The reaper's pass: dead-letters leased messages whose last lease ran out since
   * `expiredSince` with no delivery left, and wakes long polls of inboxes where delayed or
   * backed-off messages became visible since `since` (the previous pass).
   */
  async reap(since: number, expiredSince = since): Promise<number> {
    const now = this.deps.clock.now();
    let reaped = 0;
    for (let batch = REAP_BATCH; batch === REAP_BATCH; ) {
      batch = await this.store.inTransaction(async (tx) => {
        const exhausted = await this.store.claimExhausted(tx, expiredSince, now, REAP_BATCH);
        for (const row of exhausted) {
          await this.settling([row], 'dead_letter', async () => {
            await this.store.endAttempts(tx, [row], 'expired', 'visibility timeout expired', now);
            await this.deadLetter(tx, row, `visibility timeout expired after ${row.deliveries} deliveries`, now, SYSTEM_ACTOR);
          });
        }
        return exhausted.length;
      });
      reaped += batch;
    }
    this.wakeups.committed(await this.store.destinationsBecomingVisible(autocommit, since, now));
    return reaped;
  }

  async rateLimit(caller: Caller, agentId: string): Promise<{ limit: number; remaining: number; reset_at: string }> {
    checkReceiver(caller, agentId);
    const state: RateLimitState = await this.deps.limiter.peek(`agent:${agentId}`);
    return { limit: state.limit, remaining: state.remaining, reset_at: iso(state.resetAt) };
  }

  /** DeliveryStats port: measured latency (median delivery→ack) and success ratio per agent. */
  async statsFor(tx: Tx, agentIds: string[]) {
    const { latencies, outcomes } = await this.store.deliveryStats(tx, agentIds, 100);
    const result = new Map<string, { latency_ms: number | null; success_ratio: number | null; samples: number }>();
    for (const agentId of agentIds) {
      const samples = latencies.filter((l) => l.destination === agentId).map((l) => Number(l.latency)).sort((a, b) => a - b);
      const counts = outcomes.filter((o) => o.destination === agentId);
      const count = (outcome: string) => Number(counts.find((c) => c.outcome === outcome)?.n ?? 0);
      const settled = count('acked') + count('rejected') + count('expired') + count('dead');
      result.set(agentId, {
        latency_ms: samples.length > 0 ? samples[Math.floor(samples.length / 2)]! : null,
        success_ratio: settled > 0 ? count('acked') / settled : null,
        samples: settled,
      });
    }
    return result;
  }
}
