import type { Attributes } from '@opentelemetry/api';
import type { OutgoingMessage } from '../kernel/ports.js';
import { contextOf, inSpan, linkTo, SpanKind, startSpan, traceparentOf, traceparentOfSpan, type Span } from '../kernel/tracing.js';
import type { MessageRow } from './store.js';

/** What the OTel messaging conventions put on every span of an inbox. */
const MESSAGING_SYSTEM = 'switchboard';

/** The trace of one insert of messages: the context each new row keeps as its `traceparent`. */
export interface SendTrace {
  traceparentFor(message: OutgoingMessage, id: string): string | null;
  /** Once the insert is done (or failed). */
  end(): void;
}

/**
 * What the inbox tells its tracing, at the three places where a trace meets a message: its
 * send (whose context the row keeps), a receive that leased it, and its settlement (whose span
 * is the context its producer's outcome handler runs in). The inbox's rules never see a span.
 */
export interface InboxTracing {
  sending(messages: readonly OutgoingMessage[]): SendTrace;
  /** A claim of `destination` that leased `rows`, started at `startTime`. */
  received(destination: string, rows: readonly MessageRow[], startTime: number): void;
  /** Runs `settle` (an acknowledge, a reject, a dead letter of `rows`) in the settlement's span. */
  settling<T>(
    rows: readonly MessageRow[],
    operation: 'ack' | 'reject' | 'dead_letter',
    settle: () => Promise<T>,
    startTime?: number,
  ): Promise<T>;
}

/** The time a span that starts now is stamped with (what a span measured from an earlier point passes as `startTime`). */
export function spanClock(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The inbox's spans (PRODUCER `send`, CONSUMER `receive`, CLIENT `settle`; OTel messaging
 * conventions). Without a tracer provider the spans record nothing and each row keeps what
 * its sender gave.
 */
export class InboxSpans implements InboxTracing {
  sending(messages: readonly OutgoingMessage[]): SendTrace {
    return new SendSpans(messages);
  }

  /** Only claims that lease something get a span (a long poll's empty looks are not worth one each), linked to each message's send. */
  received(destination: string, rows: readonly MessageRow[], startTime: number): void {
    if (rows.length === 0) return;
    startSpan(`receive ${destination}`, {
      kind: SpanKind.CONSUMER,
      startTime,
      links: () => rows.flatMap((row) => linkTo(row.traceparent)),
      attributes: () => ({
        'messaging.system': MESSAGING_SYSTEM,
        'messaging.operation.name': 'receive',
        'messaging.operation.type': 'receive',
        'messaging.destination.name': destination,
        'messaging.batch.message_count': rows.length,
      }),
    }).end();
  }

  /**
   * A `settle {destination}` span. One message's span is a child of the context stored with
   * it, so its trace goes on even when the agent propagated nothing; the request that settled
   * it is a link. A batch's span is the request's child, linked to each message.
   */
  settling<T>(
    rows: readonly MessageRow[],
    operation: 'ack' | 'reject' | 'dead_letter',
    settle: () => Promise<T>,
    startTime?: number,
  ): Promise<T> {
    const one = rows.length === 1 ? rows[0]! : null;
    return inSpan(
      `settle ${rows[0]!.destination}`,
      {
        kind: SpanKind.CLIENT,
        startTime,
        parent: one?.traceparent ? contextOf(one.traceparent) : undefined,
        links: () => (one ? linkTo(traceparentOf()) : rows.flatMap((row) => linkTo(row.traceparent))),
        attributes: () => ({
          'messaging.system': MESSAGING_SYSTEM,
          'messaging.operation.name': operation,
          'messaging.operation.type': 'settle',
          'messaging.destination.name': rows[0]!.destination,
          ...(one
            ? { 'messaging.message.id': one.id, 'messaging.message.delivery_count': one.deliveries }
            : { 'messaging.batch.message_count': rows.length }),
        }),
      },
      settle,
    );
  }
}

/**
 * The `send` spans of messages inserted together. A message that carries a trace context of
 * its own (a step's, a routine fire's, a redriven dead letter's) gets a span in that trace;
 * the others share one span, the child of the active one (the request's): a batch send
 * records one span with its message count, not one per message.
 */
class SendSpans implements SendTrace {
  private readonly spans: Span[] = [];
  private shared: string | null | undefined;

  constructor(private readonly messages: readonly OutgoingMessage[]) {}

  traceparentFor(message: OutgoingMessage, id: string): string | null {
    if (message.traceparent || this.messages.length === 1) {
      const span = this.start(
        message.destination,
        () => ({
          'messaging.message.id': id,
          'messaging.message.conversation_id': message.thread_id,
          'switchboard.message.event_name': message.event_name,
        }),
        message.traceparent,
      );
      return traceparentOfSpan(span) ?? message.traceparent ?? null;
    }
    if (this.shared === undefined) {
      const untraced = this.messages.filter((m) => !m.traceparent);
      const destination = untraced.every((m) => m.destination === untraced[0]!.destination) ? untraced[0]!.destination : undefined;
      this.shared = traceparentOfSpan(this.start(destination, () => ({ 'messaging.batch.message_count': untraced.length })));
    }
    return this.shared;
  }

  end(): void {
    for (const span of this.spans) span.end();
  }

  /** A span named `send {destination}`, or `send` for a batch to several destinations. */
  private start(destination: string | undefined, attributes: () => Attributes, traceparent?: string | null): Span {
    const span = startSpan(destination === undefined ? 'send' : `send ${destination}`, {
      kind: SpanKind.PRODUCER,
      parent: traceparent ? contextOf(traceparent) : undefined,
      attributes: () => ({
        'messaging.system': MESSAGING_SYSTEM,
        'messaging.operation.name': 'send',
        'messaging.operation.type': 'send',
        ...(destination === undefined ? {} : { 'messaging.destination.name': destination }),
        ...attributes(),
      }),
    });
    this.spans.push(span);
    return span;
  }
}
