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
} from '@opentelemetry/api';
import { contextOf, failed, TRACEPARENT, traceparentOf, tracer } from '#client/tracing.js';

export { contextOf, failed, traceparentOf, tracer };

export { SpanKind, SpanStatusCode, type Context, type Span };

const INVALID_TRACE = '0'.repeat(32);
const INVALID_SPAN = '0'.repeat(16);

/** A W3C `traceparent` header value, or null when `value` is not one (absent, malformed, all zeros). */
export function validTraceparent(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match || match[1] === INVALID_TRACE || match[2] === INVALID_SPAN) return null;
  return match[0];
}

/** The traceparent of `span`, or null (a span of the no-op API without a parent has none). */
export function traceparentOfSpan(span: Span): string | null {
  return traceparentOf(trace.setSpan(ROOT_CONTEXT, span));
}

/**
 * The span of `parent` when it is one this server did not sample. No sampler the server offers
 * records a child of it (a parent-based one follows it, a ratio decides again on the same trace
 * id, always_off drops everything), so that span stands in for the child: the SDK's span start
 * (new ids, attribute checks, the sampler, its span metrics) is skipped on the unsampled path.
 */
function unsampledLocalParent(parent: Context): Span | undefined {
  const span = trace.getSpan(parent);
  if (!span || span.isRecording()) return undefined;
  const { isRemote, traceFlags } = span.spanContext();
  return !isRemote && (traceFlags & TraceFlags.SAMPLED) === 0 ? span : undefined;
}

/** A link to the span of `traceparent` (a batch's members, the request that settled a message). */
export function linkTo(traceparent: string | null | undefined): Link[] {
  const span = trace.getSpanContext(contextOf(traceparent));
  return span ? [{ context: span }] : [];
}

export interface SpanOptions {
  kind?: SpanKind;
  /** Built only when the span records. */
  attributes?: () => Attributes;
  /** Built only when the span records. */
  links?: () => Link[];
  /** The parent; default the active context. */
  parent?: Context;
  /** When the work began, if before the span could be named (default now). */
  startTime?: number;
}

/**
 * Starts a span whose attributes and links are built and set only once it is known to record:
 * the samplers the server offers (ratio, parent-based) read neither, and attributes given at the
 * start are checked three times by the SDK, sampled or not.
 */
export function startSpan(name: string, options: SpanOptions): Span {
  const parent = options.parent ?? context.active();
  const unsampled = unsampledLocalParent(parent);
  if (unsampled) return unsampled;
  const span = tracer().startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, startTime: options.startTime }, parent);
  if (span.isRecording()) {
    if (options.attributes) span.setAttributes(options.attributes());
    if (options.links) span.addLinks(options.links());
  }
  return span;
}

/**
 * Runs `fn` inside a new span (active for everything it awaits), ends it when `fn` settles and
 * marks it failed when `fn` throws.
 */
export function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = startSpan(name, { ...options, parent });
  // The active span stood in for an unsampled child: the context `fn` runs in is already the right one.
  if (!options.parent && span === trace.getSpan(parent)) return fn(span);
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

/** Whether a span is active (a traced request): false always without a tracer provider. */
export function hasActiveSpan(): boolean {
  return trace.getSpanContext(context.active()) !== undefined;
}
