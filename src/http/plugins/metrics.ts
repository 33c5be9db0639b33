import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Registry, type Metric } from 'prom-client';
import type { WorkerReport } from '../../workers/workers.js';

/** Prometheus metrics of one app instance (its own registry, so test apps do not collide). */
export function createMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'switchboard_' });
  return registry;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30];

/** The requests of one method, route pattern and status. */
interface Series {
  labels: { method: string; route: string; status: string };
  /** Requests per latency bucket (not cumulative), the last one past every bound. */
  perBucket: number[];
  sum: number;
  count: number;
}

type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

/** A metric whose samples are read when scraped, in the shape prom-client's registry reads from its own. */
function metric(name: string, help: string, type: 'counter' | 'gauge' | 'histogram', values: () => Sample[]): Metric {
  return { name, help, type, get: async () => ({ name, help, type, aggregator: 'sum', values: values() }) } as unknown as Metric;
}

/** SQLite's physical commits and the writes they carried (group commit, db/sqlite-driver.ts). */
export function installWriteMetrics(registry: Registry, stats: () => { commits: number; writes: number }): void {
  registry.registerMetric(
    metric('switchboard_sqlite_commits_total', 'SQLite transactions committed', 'counter', () => [{ labels: {}, value: stats().commits }]),
  );
  registry.registerMetric(
    metric('switchboard_sqlite_writes_total', 'Writes (transactions and lone statements) carried by those commits', 'counter', () => [
      { labels: {}, value: stats().writes },
    ]),
  );
}

/** The background workers' passes, read when scraped from what each worker keeps (workers/worker.ts). */
export function installWorkerMetrics(registry: Registry, workers: WorkerReport): void {
  registry.registerMetric(
    metric('switchboard_worker_runs_total', 'Background worker passes, by worker and outcome (ok, failed: the pass threw)', 'counter', () =>
      workers.statuses().flatMap((status) => [
        { labels: { worker: status.name, outcome: 'ok' }, value: status.runs - status.failures },
        { labels: { worker: status.name, outcome: 'failed' }, value: status.failures },
      ]),
    ),
  );
  registry.registerMetric(
    metric('switchboard_worker_run_seconds_total', "Time spent in a worker's passes (divided by its runs: the mean pass)", 'counter', () =>
      workers.statuses().map((status) => ({ labels: { worker: status.name }, value: status.busySeconds })),
    ),
  );
  registry.registerMetric(
    metric('switchboard_worker_last_run_duration_seconds', "How long a worker's last finished pass took", 'gauge', () =>
      workers
        .statuses()
        .flatMap((status) => (status.lastRun ? [{ labels: { worker: status.name }, value: status.lastRun.durationMs / 1000 }] : [])),
    ),
  );
}

/**
 * Request counts and latencies as plain numbers, shaped for Prometheus only when scraped.
 * prom-client's Counter and Histogram validate and hash their labels on every observation
 * (~2 µs and ~800 bytes, profiled), which every request paid.
 */
class HttpRequestMetrics {
  private readonly series = new Map<string, Series>();

  record(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.series.get(key);
    if (!series) {
      series = {
        labels: { method, route, status: String(status) },
        perBucket: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      this.series.set(key, series);
    }
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket++;
    series.perBucket[bucket]! += 1;
    series.sum += seconds;
    series.count += 1;
  }

  /** The two metrics in the shape prom-client's registry reads from its own. */
  metrics(): Metric[] {
    const all = () => [...this.series.values()];
    const latency = 'switchboard_http_request_duration_seconds';
    return [
      metric('switchboard_http_requests_total', 'HTTP requests by route and status', 'counter', () =>
        all().map((s) => ({ labels: s.labels, value: s.count })),
      ),
      metric(latency, 'HTTP request latency by route and status', 'histogram', () =>
        all().flatMap((s) => this.histogramSamples(latency, s)),
      ),
    ];
  }

  private histogramSamples(name: string, series: Series): Sample[] {
    const samples: Sample[] = [];
    let cumulative = 0;
    LATENCY_BUCKETS.forEach((bound, i) => {
      cumulative += series.perBucket[i]!;
      samples.push({ labels: { ...series.labels, le: bound }, value: cumulative, metricName: `${name}_bucket` });
    });
    samples.push({ labels: { ...series.labels, le: '+Inf' }, value: series.count, metricName: `${name}_bucket` });
    samples.push({ labels: series.labels, value: series.sum, metricName: `${name}_sum` });
    samples.push({ labels: series.labels, value: series.count, metricName: `${name}_count` });
    return samples;
  }
}

export function installMetrics(app: FastifyInstance, registry: Registry): void {
  const http = new HttpRequestMetrics();
  for (const metric of http.metrics()) registry.registerMetric(metric);
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, not the URL, so ids do not explode the label set.
    http.record(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
