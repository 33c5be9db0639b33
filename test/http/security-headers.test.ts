import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createArtifact, download } from '../artifacts/fixtures.js';
import { statelessRequest } from '../mcp/fixtures.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

// A stand-in console build, so this file needs no `npm run build`.
const build = mkdtempSync(path.join(tmpdir(), 'switchboard-console-'));
mkdirSync(path.join(build, 'assets'));
writeFileSync(
  path.join(build, 'index.html'),
  '<!doctype html><div id="root"></div><script type="module" src="/console/assets/index-AbC123.js"></script>',
);
writeFileSync(path.join(build, 'assets', 'index-AbC123.js'), 'console.log("console")');
afterAll(() => rmSync(build, { recursive: true, force: true }));

const HTML = { accept: 'text/html' };

/** A Content-Security-Policy header as directive → its values. */
function directives(header: string | null): Map<string, string[]> {
  const parsed = new Map<string, string[]>();
  for (const part of (header ?? '').split(';')) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) parsed.set(name.toLowerCase(), values);
  }
  return parsed;
}

/** A page's policy: scripts from its own origin only (no inline, no eval), and no framing. */
function expectPagePolicy(headers: Headers, where: string) {
  const policy = directives(headers.get('content-security-policy'));
  expect(policy.get('script-src'), where).toEqual(["'self'"]);
  expect(policy.get('frame-ancestors'), where).toEqual(["'none'"]);
  expect(policy.get('object-src'), where).toEqual(["'none'"]);
  expect(headers.get('x-content-type-options'), where).toBe('nosniff');
}

/** Data (the API, downloads): opened as a page, it runs sandboxed, with no script, in an origin of its own. */
function expectDataPolicy(headers: Headers, where: string) {
  const policy = directives(headers.get('content-security-policy'));
  expect(policy.get('sandbox'), where).toEqual([]);
  expect(policy.get('default-src'), where).toEqual(["'none'"]);
  expect(headers.get('x-content-type-options'), where).toBe('nosniff');
}

/** Sends `request` as raw bytes and returns the head of the answer, lowercased. */
function rawHead(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(answer.split('\r\n\r\n')[0]!.toLowerCase()));
    socket.end(request);
  });
}

describeEachDialect('browser security headers', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_CONSOLE_DIR: build } });

  it('serves the console and the approval page under a policy that allows their own scripts only, with no Referer', async () => {
    for (const where of [
      '/console',
      '/console/agents?page=2',
      '/console/approve/eyJyIjoicnVuXzEifQ.c2ln',
      '/console/assets/index-AbC123.js',
    ]) {
      const res = await server.api.get(where, { key: null, headers: HTML });
      expect(res.status, where).toBe(200);
      expectPagePolicy(res.headers, where);
      expect(directives(res.headers.get('content-security-policy')).get('connect-src'), where).toEqual(["'self'"]);
      expect(res.headers.get('referrer-policy'), where).toBe('no-referrer');
    }
    // Not the console: a path that only starts like it.
    const other = await server.api.get('/consoles', { key: null });
    expectDataPolicy(other.headers, '/consoles');
  });

  it('serves /docs and its files under a policy that allows their own scripts only', async () => {
    for (const where of ['/docs', '/docs/', '/docs/static/swagger-initializer.js', '/docs/json']) {
      const res = await server.api.get(where, { key: null });
      expect(res.status, where).toBe(200);
      expectPagePolicy(res.headers, where);
    }
  });

  it('sends artifact downloads sandboxed and nosniff, still as attachments: with a key, ranged, unchanged and through a signed URL', async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>';
    const artifact = await createArtifact(server.api, { bytes: svg, filename: 'chart.svg', fileType: 'image/svg+xml' });
    const url = `/api/v1/artifacts/${artifact.id}/download`;
    const whole = await download(server.api, url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toContain('image/svg+xml');
    const etag = whole.headers.get('etag')!;
    const signed = await server.api.post(`/api/v1/artifacts/${artifact.id}/signed-url`, { expires_in: 60 });
    expect(signed.status, signed.text).toBe(201);
    const answers = {
      whole,
      ranged: await download(server.api, url, { range: 'bytes=0-9' }),
      unchanged: await download(server.api, url, { 'if-none-match': etag }),
      signed: await download(server.api, signed.body.data.url, {}, null),
    };
    expect([answers.ranged.status, answers.unchanged.status, answers.signed.status]).toEqual([206, 304, 200]);
    for (const [where, answer] of Object.entries(answers)) {
      expectDataPolicy(answer.headers, where);
      expect(answer.headers.get('content-disposition'), where).toMatch(/^attachment; filename="chart.svg"/);
    }
  });

  it('sends nosniff on the API, the routine webhook, errors and streamed answers, and errors written before routing', async () => {
    const routine = await server.api.post('/core/api/v1/routines', {
      name: `hook-${dialect}`,
      trigger_type: 'webhook',
      target_agent: 'nobody',
    });
    expect(routine.status, routine.text).toBe(201);
    const answers = {
      api: await server.api.get('/api/v1/auth/whoami'),
      webhook: await server.api.post(`/core/api/v1/routines/webhook/${routine.body.data.webhook_token}`, { a: 1 }, { key: null }),
      unauthorized: await server.api.get('/api/v1/auth/whoami', { key: null }),
      'no route': await server.api.get('/api/v1/no-such-thing'),
      'bad URL': await server.api.get('/api/v1/artifacts/%zz'),
      health: await server.api.get('/healthz', { key: null }),
    };
    expect([answers.api.status, answers.webhook.status, answers.unauthorized.status, answers['no route'].status]).toEqual([
      200, 202, 401, 404,
    ]);
    expect(answers['bad URL'].status).toBe(400);
    for (const [where, answer] of Object.entries(answers)) expectDataPolicy(answer.headers, where);

    // MCP answers by taking over the raw response (no onSend): the headers reach it too.
    const mcp = await fetch(`${server.url}/core/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${server.adminKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'headers', version: '1' } },
      }),
    });
    await mcp.arrayBuffer();
    expect(mcp.status).toBe(200);
    expectDataPolicy(mcp.headers, 'mcp');
    const stateless = await statelessRequest(server, server.adminKey, 'tools/list');
    expect(stateless.status).toBe(200);
    expectDataPolicy(stateless.headers, 'mcp, stateless');

    // So does A2A's event stream (its first event, the task, comes before any agent works).
    const agent = await server.agent(`streamer-${dialect}`);
    const registered = await agent.post('/api/v1/discovery/capabilities', {
      agent_id: `streamer-${dialect}`,
      capability: 'stream',
      groups: ['team'],
    });
    expect(registered.status, registered.text).toBe(201);
    const gone = new AbortController();
    const stream = await fetch(`${server.url}/a2a/streamer-${dialect}`, {
      method: 'POST',
      signal: gone.signal,
      headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendStreamingMessage',
        params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] } },
      }),
    });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expectDataPolicy(stream.headers, 'a2a stream');
    gone.abort();

    // A request Node's parser refuses is answered before Fastify sees it.
    const head = await rawHead(Number(new URL(server.url).port), 'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
    expect(head).toMatch(/^http\/1\.1 400/);
    expect(head).toContain('x-content-type-options: nosniff');
    expect(head).toMatch(/content-security-policy: [^\r\n]*sandbox/);
  });
});
