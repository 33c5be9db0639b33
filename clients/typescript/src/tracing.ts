import {
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanStatusCode,
  context,
  trace,
  TraceFlags,
  type Context,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

/** A W3C `traceparent` header value: version 00, trace id, parent span id, flags. */
export const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * Spans through `@opentelemetry/api` only. Without a registered tracer provider every call
 * here is the API's no-op: a span that records nothing, and a context that carries only what
 * it was given.
 */
export function tracer(): Tracer {
  // Kept per registered provider, not for good: a provider registered later (a second app in one
  // process, after the first unregistered its own) gets a tracer of its own.
  const global = trace.getTracerProvider();
  const provider = global instanceof ProxyTracerProvider ? global.getDelegate() : global;
  if (current?.provider !== provider) current = { provider, tracer: provider.getTracer('switchboard') };
  return current.tracer;
}

let current: { provider: TracerProvider; tracer: Tracer } | undefined;

/** The `traceparent` of the span active in `ctx` (default: the current one), or null without one. */
export function traceparentOf(ctx: Context = context.active()): string | null {
  const span = trace.getSpanContext(ctx);
  if (!span || !trace.isSpanContextValid(span)) return null;
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00'}`;
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

/** Marks `span` failed with `err` (its message and, for an Error, the exception event). */
export function failed(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  if (err instanceof Error) span.recordException(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}
