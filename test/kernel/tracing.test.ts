import { context, trace } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  InMemorySpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import { inSpan, startSpan, traceparentOfSpan } from '../../src/kernel/tracing.js';

describe('spans under an unsampled parent', () => {
  let exporter = new InMemorySpanExporter();
  let provider: NodeTracerProvider | undefined;

  function register(sampler: Sampler): void {
    // A provider's shutdown stops its exporter for good.
    exporter = new InMemorySpanExporter();
    provider = new NodeTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
  }

  afterEach(async () => {
    await provider?.shutdown();
    trace.disable();
    context.disable();
  });

  // The samplers the server offers: each drops a child of what it dropped here.
  const samplers: Array<[string, () => Sampler]> = [
    ['parent-based ratio', () => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0) })],
    ['plain ratio', () => new TraceIdRatioBasedSampler(0)],
    ['always off', () => new AlwaysOffSampler()],
  ];

  it.each(samplers)(
    '%s: a child is the parent’s own span, and inSpan runs in the parent’s context, recording nothing',
    async (_, sampler) => {
      register(sampler());
      const request = trace.getTracer('test').startSpan('request');
      expect(request.isRecording()).toBe(false);
      await context.with(trace.setSpan(context.active(), request), async () => {
        const child = startSpan('send x', { attributes: () => ({ a: 1 }) });
        expect(child).toBe(request);
        expect(traceparentOfSpan(child)).toBe(`00-${request.spanContext().traceId}-${request.spanContext().spanId}-00`);
        const active = context.active();
        expect(await inSpan('settle x', {}, async (span) => [span, context.active()])).toEqual([request, active]);
      });
      await provider!.forceFlush();
      expect(exporter.getFinishedSpans()).toEqual([]);
    },
  );

  it('a child of a sampled parent is a span of its own, recorded', async () => {
    register(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const request = trace.getTracer('test').startSpan('request');
    await context.with(trace.setSpan(context.active(), request), () =>
      inSpan('settle x', { attributes: () => ({ a: 1 }) }, async (span) => {
        expect(span).not.toBe(request);
        expect(span.spanContext().traceId).toBe(request.spanContext().traceId);
      }),
    );
    request.end();
    await provider!.forceFlush();
    const [settle] = exporter.getFinishedSpans();
    expect(settle!.name).toBe('settle x');
    expect(settle!.attributes).toEqual({ a: 1 });
    expect(settle!.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
  });
});
