import http from 'node:http';
import { expect, it } from 'vitest';
import type { ApiResponse } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { sendForm } from '../artifacts/fixtures.js';

/** An error in the envelope, with the request id also in its header. */
function expectEnvelope(res: ApiResponse, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body.error.code).toBe(code);
  expect(res.body.meta.request_id).toMatch(/^req_/);
  expect(res.headers.get('x-request-id')).toBe(res.body.meta.request_id);
}

/** JSON text nesting arrays `depth` levels deep. */
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** One request on its own connection, with headers fetch would refuse to send. */
function rawGet(
  url: string,
  headers: Record<string, string>,
  agent: http.Agent,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers, agent }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }));
    });
    request.on('error', reject);
  });
}

describeEachDialect('hostile input', (dialect) => {
  const server = useServer(dialect);

  async function webhookUrl(): Promise<string> {
    const created = await server.api.post('/core/api/v1/routines', {
      name: `hook-${Math.random()}`,
      trigger_type: 'webhook',
      target_agent: 'nobody',
    });
    return `/core/api/v1/routines/webhook/${created.body.data.webhook_token}`;
  }

  it('refuses NUL characters in body, query and path text with 400 naming the field', async () => {
    const title = await server.api.post('/core/api/v1/tasks', { title: 'a\u0000b' });
    expectEnvelope(title, 400, 'invalid_request');
    expect(title.body.error.details).toEqual([{ field: 'title', in: 'body', message: expect.stringContaining('NUL character (\\u0000)') }]);

    const hook = await server.api.post(await webhookUrl(), { a: { b: ['x', 'y\u0000'] }, ['k\u0000']: 1 }, { key: null });
    expectEnvelope(hook, 400, 'invalid_request');
    expect(hook.body.error.details[0].field).toBe('a.b.1');

    const query = await server.api.get('/core/api/v1/tasks?assigned_to=a%00b');
    expectEnvelope(query, 400, 'invalid_request');
    expect(query.body.error.details).toEqual([{ field: 'assigned_to', in: 'querystring', message: expect.stringContaining('NUL') }]);

    const path = await server.api.get('/core/api/v1/tasks/tsk_%00');
    expectEnvelope(path, 400, 'invalid_request');
    expect(path.body.error.details[0]).toMatchObject({ field: 'id', in: 'params' });

    // JSON carried as text (a form's metadata, the list filter) is refused once parsed.
    const form = await sendForm(server.api, { bytes: 'x', metadata: '{"k":"a\\u0000"}' });
    expectEnvelope(form, 400, 'invalid_request');
    expect(form.body.error.details[0].field).toBe('metadata.k');
    const filter = await server.api.get(`/api/v1/artifacts?metadata=${encodeURIComponent('{"k":"\\u0000"}')}`);
    expectEnvelope(filter, 400, 'invalid_request');

    // A backslash followed by `u0000` is text like any other.
    const escaped = await server.api.post('/core/api/v1/tasks', { title: 'a\\u0000b' });
    expect(escaped.status).toBe(201);
    expect(escaped.body.data.title).toBe('a\\u0000b');
  });

  it('refuses unpaired surrogates (which PostgreSQL’s jsonb cannot hold) with 400 naming the field; a pair is text', async () => {
    // The fuzz found it: an artifact's metadata key "\ud800" was a 500 on PostgreSQL.
    const snippet = await server.api.post('/api/v1/artifacts/snippets', { name: 'lone', content: {}, metadata: { '\ud800': [] } });
    expectEnvelope(snippet, 400, 'invalid_request');
    expect(snippet.body.error.details[0]).toMatchObject({
      field: 'metadata.\\ud800',
      in: 'body',
      message: expect.stringContaining('unpaired surrogate'),
    });
    const low = await server.api.post('/core/api/v1/tasks', { title: 'a\udc00b' });
    expectEnvelope(low, 400, 'invalid_request');
    expect(low.body.error.details[0].field).toBe('title');
    const form = await sendForm(server.api, { bytes: 'x', metadata: '{"k":"\\uD83D"}' });
    expectEnvelope(form, 400, 'invalid_request');
    const filter = await server.api.get(`/api/v1/artifacts?metadata=${encodeURIComponent('{"k":"\\udfff"}')}`);
    expectEnvelope(filter, 400, 'invalid_request');

    const paired = await server.api.post('/api/v1/artifacts/snippets', {
      name: 'pair',
      content: {},
      metadata: { '\ud83d\ude00': ['\ud83d\ude00'] },
    });
    expect(paired.status, paired.text).toBe(201);
    const found = await server.api.get(
      `/api/v1/artifacts?metadata=${encodeURIComponent(JSON.stringify({ '\ud83d\ude00': ['\ud83d\ude00'] }))}`,
    );
    expect(found.status, found.text).toBe(200);
    expect(found.body.data.map((a: { id: string }) => a.id)).toContain(paired.body.data.id);
  });

  it('refuses JSON nested deeper than 64 levels at parse time, on every JSON route', async () => {
    const hook = await webhookUrl();
    const send = (path: string, body: string, key?: null) =>
      server.api.post(path, body, { raw: true, key, headers: { 'content-type': 'application/json' } });
    expect((await send(hook, nested(64), null)).status).toBe(202);
    const refused = await send(hook, nested(65), null);
    expectEnvelope(refused, 400, 'invalid_request');
    expect(refused.body.error.details).toEqual([
      { field: 'body', in: 'body', message: 'must not nest arrays and objects deeper than 64 levels' },
    ]);
    expectEnvelope(await send(hook, nested(4_100), null), 400, 'invalid_request');
    expectEnvelope(await send('/core/api/v1/tasks', `{"title":"deep","metadata":${nested(4_100)}}`), 400, 'invalid_request');
    // Brackets inside strings are text, not nesting.
    expect((await send('/core/api/v1/tasks', JSON.stringify({ title: `"\\${nested(100)}` }))).status).toBe(201);
    const mcp = await server.api.post('/core/mcp', nested(3_000), {
      raw: true,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    });
    expectEnvelope(mcp, 400, 'invalid_request');
  });

  it('bounds every integer by what the database holds', async () => {
    for (const offset of ['1e400', 'Infinity', '-Infinity', '1e20', '2147483648']) {
      expectEnvelope(await server.api.get(`/core/api/v1/tasks?offset=${offset}`), 400, 'invalid_request');
      expectEnvelope(await server.api.get(`/api/v1/coordination/plans?offset=${offset}`), 400, 'invalid_request');
    }
    expect((await server.api.get('/core/api/v1/tasks?offset=2147483647')).status).toBe(200);

    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: 'bounded',
      steps: [{ id: 'a', type: 'agent', agent: 'x', input: {} }],
    });
    expect(plan.status).toBe(201);
    const version = await server.api.get(`/api/v1/coordination/plans/${plan.body.data.id}/versions/99999999999`);
    expectEnvelope(version, 400, 'invalid_request');
    expect(version.body.error.details).toEqual([{ field: 'version', in: 'params', message: 'must be <= 2147483647' }]);

    const artifact = await server.api.post('/api/v1/artifacts/snippets', { name: 'n.json', content: { a: 1 } });
    expect(artifact.status).toBe(201);
    expectEnvelope(await server.api.get(`/api/v1/artifacts/${artifact.body.data.id}/download?version=99999999999`), 400, 'invalid_request');
    // A JSON number too large for a double is Infinity once parsed: not a finite number.
    const infinite = await server.api.post('/api/v1/discovery/capabilities', '{"agent_id":"a","capability":"c","weight":1e400}', {
      raw: true,
      headers: { 'content-type': 'application/json' },
    });
    expectEnvelope(infinite, 400, 'invalid_request');
  });

  it('answers URLs the router cannot read in the envelope, with a request id', async () => {
    const badEscape = await server.api.get('/api/v1/coordination/plans/%zz');
    expectEnvelope(badEscape, 400, 'invalid_request');
    const longParam = await server.api.get(`/api/v1/coordination/plans/${'x'.repeat(600)}`);
    expectEnvelope(longParam, 414, 'uri_too_long');
  });

  it('answers headers too large with 431 in the envelope and closes, so a keep-alive client carries on', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await rawGet(`${server.url}/healthz`, { 'x-filler': 'a'.repeat(20_000) }, agent);
      expect(refused.status).toBe(431);
      expect(refused.headers.connection).toBe('close');
      const body = JSON.parse(refused.body);
      expect(body.error.code).toBe('header_fields_too_large');
      expect(body.meta.request_id).toMatch(/^req_/);
      expect(refused.headers['x-request-id']).toBe(body.meta.request_id);
      const next = await rawGet(`${server.url}/healthz`, {}, agent);
      expect(next.status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it('lists the allowed values of an enum in the message and the details', async () => {
    const res = await server.api.post('/core/api/v1/tasks', { title: 'x', priority: 'bogus' });
    expectEnvelope(res, 400, 'invalid_request');
    expect(res.body.error.message).toBe('Invalid request: priority must be one of: none, low, medium, high, urgent');
    expect(res.body.error.details).toEqual([{ field: 'priority', in: 'body', message: 'must be one of: none, low, medium, high, urgent' }]);
    // A union of literals says the same, once.
    const step = await server.api.post('/api/v1/coordination/plans', { alias: 'typed', steps: [{ id: 'a', type: 'bogus' }] });
    expectEnvelope(step, 400, 'invalid_request');
    expect(step.body.error.details).toEqual([
      {
        field: 'steps.0.type',
        in: 'body',
        message: 'must be one of: agent, human_approval, human_input, condition, parallel, wait, sub_plan, transform',
      },
    ]);
    const strategy = await server.api.get('/api/v1/discovery/agents?strategy=bogus');
    expect(strategy.body.error.message).toMatch(/^Invalid request: strategy must be one of: [a-z_]+(, [a-z_]+)+$/);
  });
});
