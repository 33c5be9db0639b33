import { context, propagation, trace } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { FastifyPluginCallback } from 'fastify';
import type { TracingConfig } from './config.js';

/** A started tracer provider: the HTTP plugin that makes request spans, and its end. */
export interface Tracing {
  /** @fastify/otel: a SERVER span per request (named `METHOD /route`), parented to an incoming `traceparent`. */
  readonly httpPlugin: FastifyPluginCallback;
  /** Exports what is buffered (tests, shutdown). */
  flush(): Promise<void>;
  /** Flushes, then unregisters the provider (another app in the process may start its own). */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  config: TracingConfig;
  version: string;
  /** Replaces the OTLP exporter (tests: a SimpleSpanProcessor over an InMemorySpanExporter). */
  spanProcessor?: SpanProcessor;
}

/**
 * How long a stopping server waits for the collector to take its last spans: the exporter's own
 * timeout (10 s, with retries) would hold a SIGTERM that long when the collector hangs or is gone.
 */
const SHUTDOWN_FLUSH_MS = 2_000;

function withinShutdownBound(flush: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the collector did not take the last spans within ${SHUTDOWN_FLUSH_MS} ms`)),
      SHUTDOWN_FLUSH_MS,
    );
  });
  return Promise.race([flush, bound]).finally(() => clearTimeout(timer));
}

/**
 * Starts the OpenTelemetry Node tracer provider. Called only when OTEL_* asks for
 * traces: every SDK module is imported here, dynamically, so a server without them loads none.
 * Spans go over OTLP/HTTP (protobuf unless OTEL_EXPORTER_OTLP_PROTOCOL=http/json) through a batch processor; the pg client is patched in place (it is
 * loaded before this runs, so the instrumentation's require hook would never see it).
 */
export async function startTracing(options: TracingOptions): Promise<Tracing> {
  const { config } = options;
  const [
    { NodeTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler },
    { resourceFromAttributes },
    { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  let processor = options.spanProcessor;
  if (!processor) {
    const { OTLPTraceExporter } = await (config.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'));
    processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: config.url, headers: { ...config.headers } }));
  }
  const ratio = new TraceIdRatioBasedSampler(config.sampleRatio);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: options.version }),
    sampler: config.parentBased ? new ParentBasedSampler({ root: ratio }) : ratio,
    spanProcessors: [processor],
  });
  // The async-hooks context manager and the W3C trace-context propagator, globally.
  provider.register();

  const { FastifyOtelInstrumentation } = await import('@fastify/otel');
  const fastify = new FastifyOtelInstrumentation({
    // One span per request: a span per hook (auth, rate limit, metrics …) tripled the spans for nothing an operator reads.
    instrumentHooks: false,
    instrumentHandler: false,
    requestHook: (span, request) => {
      if (span.isRecording()) span.updateName(`${request.method} ${request.routeOptions.url ?? request.url.split('?')[0]}`);
    },
  });
  fastify.setTracerProvider(provider);

  const { PgInstrumentation } = await import('@opentelemetry/instrumentation-pg');
  const pgInstrumentation = new PgInstrumentation({ enabled: false, requireParentSpan: true });
  pgInstrumentation.setTracerProvider(provider);
  const { default: pg } = await import('pg');
  const pgModule = pgInstrumentation.getModuleDefinitions().find((definition) => definition.name === 'pg');
  pgModule?.patch?.(pg);

  return {
    httpPlugin: fastify.plugin() as FastifyPluginCallback,
    flush: () => provider.forceFlush(),
    async shutdown() {
      pgModule?.unpatch?.(pg);
      fastify.disable();
      try {
        await withinShutdownBound(provider.shutdown());
      } finally {
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}
