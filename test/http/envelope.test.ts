import { expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';

describeEachDialect('HTTP conventions', (dialect) => {
  const server = useServer(dialect);

  it('wraps lists in the envelope with paging meta and a request id', async () => {
    const res = await server.api.get('/api/v1/auth/keys?limit=1');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.meta).toMatchObject({ total: 1, limit: 1, offset: 0 });
    expect(res.body.meta.request_id).toMatch(/^req_/);
    expect(res.headers.get('x-request-id')).toBe(res.body.meta.request_id);
    expect(res.body.data[0]).not.toHaveProperty('key_hash');
  });

  it('echoes a well-formed X-Request-ID and replaces a malformed one', async () => {
    const echoed = await server.api.get('/api/v1/auth/whoami', { headers: { 'x-request-id': 'trace-42.a' } });
    expect(echoed.headers.get('x-request-id')).toBe('trace-42.a');
    expect(echoed.body.meta.request_id).toBe('trace-42.a');
    const replaced = await server.api.get('/api/v1/auth/whoami', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('answers invalid bodies with 400 invalid_request and one detail per bad field', async () => {
    const res = await server.api.post('/api/v1/auth/keys', { role: 'owner', colour: 'blue' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    const fields = res.body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(expect.arrayContaining(['colour', 'role']));
    expect(res.body.meta.request_id).toMatch(/^req_/);
  });

  it('never coerces body types, while query strings are coerced', async () => {
    const res = await server.api.post('/api/v1/auth/keys', { agent_id: 'typed', name: 3 });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ field: 'name', in: 'body', message: 'must be string' }]);
    const flag = await server.api.post('/api/v1/auth/keys', { agent_id: 'typed', role: ['agent'] });
    expect(flag.status).toBe(400);
    expect((await server.api.get('/api/v1/auth/keys?limit=2&include_revoked=true')).status).toBe(200);
  });

  it('answers malformed JSON with 400 and a wrong content type with 415', async () => {
    const bad = await server.api.post('/api/v1/auth/keys', '{"role": ', {
      raw: true,
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    const xml = await server.api.post('/api/v1/auth/keys', '<key/>', { raw: true, headers: { 'content-type': 'application/xml' } });
    expect(xml.status).toBe(415);
    expect(xml.body.error.code).toBe('unsupported_media_type');
  });

  it('answers oversized bodies with 413', async () => {
    const res = await server.api.post('/api/v1/auth/keys', { name: 'x'.repeat(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  it('answers unknown routes with 404 not_found in the envelope', async () => {
    const res = await server.api.get('/api/v1/no-such-thing');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    const core = await server.api.get('/core/api/v1/nothing-here');
    expect(core.status).toBe(404);
  });

  it('bounds pagination: limit 1..500, offset ≥ 0, integers only', async () => {
    for (const query of ['limit=0', 'limit=501', 'limit=1.5', 'limit=abc', 'offset=-1', 'offset=x']) {
      const res = await server.api.get(`/api/v1/auth/keys?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    for (let i = 0; i < 3; i++) await server.api.post('/api/v1/auth/keys', { agent_id: `pager-${i}` });
    const second = await server.api.get('/api/v1/auth/keys?limit=2&offset=2');
    expect(second.status).toBe(200);
    expect(second.body.meta).toMatchObject({ total: 4, limit: 2, offset: 2 });
    expect(second.body.data).toHaveLength(2);
    const all = await server.api.get('/api/v1/auth/keys');
    expect(all.body.meta.limit).toBe(50);
    expect(all.body.data.map((k: { id: string }) => k.id).slice(2)).toEqual(second.body.data.map((k: { id: string }) => k.id));
  });

  it('serves health without credentials and metrics to admins only', async () => {
    expect((await server.api.get('/healthz', { key: null })).status).toBe(200);
    const ready = await server.api.get('/readyz', { key: null });
    expect(ready.status).toBe(200);
    // autovacuum (PostgreSQL only) depends on the server's setting: test/db/autovacuum.test.ts.
    const { autovacuum, ...checks } = ready.body.checks;
    expect(autovacuum).toEqual(dialect === 'postgres' ? expect.stringMatching(/^(on|off)$/) : undefined);
    expect(checks).toEqual({ database: 'up', blobs: 'up', listen: dialect === 'postgres' ? 'listening' : 'in_process', workers: 'up' });
    expect(ready.body.status).toBe('ready');
    expect((await server.api.get('/metrics', { key: null })).status).toBe(401);
    const agent = await server.agent('metrics-peeker');
    expect((await agent.get('/metrics')).status).toBe(403);
    const metrics = await server.api.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('# TYPE switchboard_http_requests_total counter');
    expect(metrics.text).toContain('# TYPE switchboard_http_request_duration_seconds histogram');
    expect(metrics.text).toMatch(/switchboard_http_request_duration_seconds_bucket\{[^}]*route="\/api\/v1\/auth\/keys"/);
  });

  it('counts SQLite commits and the writes they carried; concurrent writes all land', async () => {
    const counter = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
    const before = (await server.api.get('/metrics')).text;
    if (dialect === 'postgres') {
      expect(before).not.toContain('switchboard_sqlite_commits_total');
      return;
    }
    const created = await Promise.all(
      Array.from({ length: 30 }, (_, i) => server.api.post('/api/v1/auth/keys', { agent_id: `grouped-${i}` })),
    );
    expect(created.map((res) => res.status)).toEqual(Array(30).fill(201));
    for (const res of created) {
      const whoami = await server.api.get('/api/v1/auth/whoami', { key: res.body.data.key });
      expect(whoami.body.data.agent_id).toBe(res.body.data.agent_id);
    }
    const after = (await server.api.get('/metrics')).text;
    const writes = counter(after, 'switchboard_sqlite_writes_total') - counter(before, 'switchboard_sqlite_writes_total');
    const commits = counter(after, 'switchboard_sqlite_commits_total') - counter(before, 'switchboard_sqlite_commits_total');
    expect(writes).toBeGreaterThanOrEqual(30);
    expect(commits).toBeGreaterThan(0);
    expect(commits).toBeLessThanOrEqual(writes);
  });

  it('counts requests by route and status, with latency buckets that add up', async () => {
    const route = '/api/v1/auth/keys/:key_id';
    for (let i = 0; i < 3; i++) expect((await server.api.delete('/api/v1/auth/keys/key_missing')).status).toBe(404);
    const text = (await server.api.get('/metrics')).text;
    const series = (name: string) =>
      text
        .split('\n')
        .filter(
          (line) =>
            line.startsWith(`${name}{`) &&
            line.includes(`route="${route}"`) &&
            line.includes('method="DELETE"') &&
            line.includes('status="404"'),
        )
        .map((line) => ({ le: /le="([^"]+)"/.exec(line)?.[1], value: Number(line.slice(line.lastIndexOf(' ') + 1)) }));
    expect(series('switchboard_http_requests_total')).toEqual([{ le: undefined, value: 3 }]);
    expect(series('switchboard_http_request_duration_seconds_count')).toEqual([{ le: undefined, value: 3 }]);
    const buckets = series('switchboard_http_request_duration_seconds_bucket');
    expect(buckets.at(-1)).toEqual({ le: '+Inf', value: 3 });
    const counts = buckets.map((b) => b.value);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(series('switchboard_http_request_duration_seconds_sum')[0]!.value).toBeGreaterThan(0);
  });

  it('publishes a valid OpenAPI 3.1 document that lists every route', async () => {
    const res = await server.api.get('/api/v1/openapi.json', { key: null });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const result = await new Validator().validate(res.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const documented = new Set<string>();
    for (const [path, item] of Object.entries(res.body.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const routes = server.app.http.routeTable.filter((r) => !r.hidden);
    expect(routes.length).toBeGreaterThan(5);
    for (const route of routes) {
      // A wildcard (webhook paths) is documented as the path parameter `path`.
      const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\/\*$/, '/{path}');
      expect(documented, `${route.method} ${route.url}`).toContain(`${route.method} ${path}`);
    }
    // Routes that take no credentials override the document's security; the others inherit it.
    expect(res.body.paths['/core/api/v1/routines/webhook/{token}'].post.security).toEqual([]);
    expect(res.body.paths['/api/v1/auth/keys'].get.security).toBeUndefined();
    const docs = await server.api.get('/docs', { key: null });
    expect([200, 302]).toContain(docs.status);
  });
});

describeEachDialect('internal errors', (dialect) => {
  it('answers 500 internal_error without leaking internals', async () => {
    const server = await startServer(dialect);
    try {
      await server.app.platform.database.close();
      const res = await server.api.get('/api/v1/auth/keys');
      expect(res.status).toBe(500);
      expect(res.body.error).toEqual({ code: 'internal_error', message: 'Internal server error' });
      expect(res.text).not.toMatch(/at .*\.(ts|js):\d+/);
      expect((await server.api.get('/readyz', { key: null })).status).toBe(503);
    } finally {
      await server.close();
    }
  });
});
