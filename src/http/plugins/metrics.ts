import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** Prometheus metrics of one app instance (its own registry, so test apps do not collide). */
export function createMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'switchboard_' });
  return registry;
}

export function installMetrics(app: FastifyInstance, registry: Registry): void {
  const requests = new Counter({
    name: 'switchboard_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'switchboard_http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
    registers: [registry],
  });
  // Label children cached per (method, route, status): prom-client hashes a label object on
  // every call otherwise, a measurable share of a fast request.
  const children = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, not the URL, so ids do not explode the label set.
    const route = request.routeOptions.url ?? 'unmatched';
    const status = String(reply.statusCode);
    const key = `${request.method} ${route} ${status}`;
    let child = children.get(key);
    if (!child) {
      child = { count: requests.labels(request.method, route, status), time: latency.labels(request.method, route, status) };
      children.set(key, child);
    }
    child.count.inc();
    child.time.observe(reply.elapsedTime / 1000);
    done();
  });
}
