import { createContextKey, trace, type Attributes, type Context, type SpanContext } from '@opentelemetry/api';
import type { UsageReport } from './shapes.js';

/** The context key under which the agent worker puts the usage of the handler call in progress. */
const HANDLER_USAGE = createContextKey('switchboard.handler_usage');

/** A started span, as a tracer provider hands it to its span processors. */
interface StartedSpan {
  spanContext(): SpanContext;
}

/** An ended span (the SDK's ReadableSpan, of which only this is read). */
interface EndedSpan extends StartedSpan {
  readonly attributes: Attributes;
}

/**
 * What the spans of one handler call report of their model calls (OpenTelemetry GenAI
 * attributes), summed. A span whose descendant reported usage is not counted again: an
 * `invoke_agent` span that totals its `chat` spans would count them twice.
 */
export class HandlerUsage {
  private input = 0;
  private output = 0;
  private cached = 0;
  /** Tokens by model, and the provider first named with each. */
  private readonly models = new Map<string, { tokens: number; provider: string | undefined }>();
  private readonly parents = new Map<string, string>();
  private readonly covered = new Set<string>();
  private open = true;

  started(spanId: string, parentId: string | undefined): void {
    if (parentId !== undefined) this.parents.set(spanId, parentId);
  }

  ended(spanId: string, attributes: Attributes): void {
    if (!this.open) return;
    const input = count(attributes['gen_ai.usage.input_tokens']);
    const output = count(attributes['gen_ai.usage.output_tokens']);
    if (input === undefined && output === undefined) return;
    if (!this.covered.has(spanId)) {
      this.input += input ?? 0;
      this.output += output ?? 0;
      this.cached += count(attributes['gen_ai.usage.cache_read.input_tokens']) ?? 0;
      const model = text(attributes['gen_ai.response.model']) ?? text(attributes['gen_ai.request.model']) ?? 'unknown';
      const seen = this.models.get(model);
      const provider = text(attributes['gen_ai.provider.name']) ?? text(attributes['gen_ai.system']);
      this.models.set(model, { tokens: (seen?.tokens ?? 0) + (input ?? 0) + (output ?? 0), provider: seen?.provider ?? provider });
    }
    for (let id = this.parents.get(spanId); id !== undefined && !this.covered.has(id); id = this.parents.get(id)) this.covered.add(id);
  }

  /** The sum, as the acknowledgement's usage (the model that used the most tokens names it); undefined when no span reported any. */
  close(): UsageReport | undefined {
    this.open = false;
    let top: [string, { tokens: number; provider: string | undefined }] | undefined;
    for (const entry of this.models) if (top === undefined || entry[1].tokens > top[1].tokens) top = entry;
    if (top === undefined) return undefined;
    const report: UsageReport = { model: top[0], input_tokens: this.input, output_tokens: this.output };
    if (top[1].provider !== undefined) report.provider = top[1].provider;
    if (this.cached > 0) report.cached_tokens = this.cached;
    return report;
  }
}

/** `ctx` with `usage` as the handler call's: spans started under it count towards it. */
export function withHandlerUsage(ctx: Context, usage: HandlerUsage): Context {
  return ctx.setValue(HANDLER_USAGE, usage);
}

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** A span processor (the shape `@opentelemetry/sdk-trace-base`'s providers take), with nothing to flush. */
export interface GenAiUsageProcessor {
  onStart(span: StartedSpan, parentContext: Context): void;
  onEnd(span: EndedSpan): void;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * A span processor to add to the tracer provider: the spans a handler's call starts (in its
 * context) that carry GenAI usage attributes (`gen_ai.usage.input_tokens`, `…output_tokens`,
 * `gen_ai.response.model` or `gen_ai.request.model`, `gen_ai.provider.name` or `gen_ai.system`)
 * are summed into the acknowledgement's usage when the handler returns none of its own.
 */
export function genAiUsageProcessor(): GenAiUsageProcessor {
  // Keyed by the span object, which the SDK passes to both calls: nothing is kept for a span that never ends.
  const calls = new WeakMap<StartedSpan, HandlerUsage>();
  return {
    onStart(span, parentContext) {
      const usage = parentContext.getValue(HANDLER_USAGE);
      if (!(usage instanceof HandlerUsage)) return;
      calls.set(span, usage);
      usage.started(span.spanContext().spanId, trace.getSpanContext(parentContext)?.spanId);
    },
    onEnd(span) {
      calls.get(span)?.ended(span.spanContext().spanId, span.attributes);
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}
