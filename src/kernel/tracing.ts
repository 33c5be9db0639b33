import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

/**
 * Spans through `@opentelemetry/api` only. Without a tracer provider (OTEL_* unset:
 * tracing.ts never loads the SDK) every call here is the API's no-op: a span that records
 * nothing, and a context that carries only what it was given.
 */
export function tracer(): Tracer {
  // Asked each time, not kept: a provider registered later (a second app in one process, after
  // the first unregistered its own) would never reach a tracer taken from the one before.
  return trace.getTracer('switchboard');
}

export { SpanKind, SpanStatusCode, type Context, type Span };

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE = '0'.repeat(32);
const INVALID_SPAN = '0'.repeat(16);

/** A W3C `traceparent` header value, or null when `value` is not one (absent, malformed, all zeros). */
export function validTraceparent(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match || match[1] === INVALID_TRACE || match[2] === INVALID_SPAN) return null;
  return match[0];
}

/** The `traceparent` of the span active in `ctx` (default: the current one), or null without one. */
export function traceparentOf(ctx: Context = context.active()): string | null {
  const span = trace.getSpanContext(ctx);
  if (!span || !trace.isSpanContextValid(span)) return null;
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00'}`;
}

/** The traceparent of `span`, or null (a span of the no-op API without a parent has none). */
export function traceparentOfSpan(span: Span): string | null {
  return traceparentOf(trace.setSpan(ROOT_CONTEXT, span));
}

/** A context whose parent is the (remote) span of `traceparent`; the root context without one. */
export function contextOf(traceparent: string | null | undefined): Context {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  });
}

/** A link to the span of `traceparent` (a batch's members, the request that settled a message). */
export function linkTo(traceparent: string | null | undefined): Link[] {
  const span = trace.getSpanContext(contextOf(traceparent));
  return span ? [{ context: span }] : [];
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** The parent; default the active context. */
  parent?: Context;
  /** When the work began, if before the span could be named (default now). */
  startTime?: number;
}

/**
 * Runs `fn` inside a new span (active for everything it awaits), ends it when `fn` settles and
 * marks it failed when `fn` throws.
 */
export function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, links: options.links, startTime: options.startTime },
    parent,
  );
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks `span` failed with `err` (its message and, for an Error, the exception event). */
export function failed(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  if (err instanceof Error) span.recordException(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** Whether a span is active (a traced request): false always without a tracer provider. */
export function hasActiveSpan(): boolean {
  return trace.getSpanContext(context.active()) !== undefined;
}
