import { createHash, generateKeyPairSync } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS, retryAfterMs, Switchboard, SwitchboardError, type RetryEvent } from '../../src/client/index.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

async function signer(admin: Switchboard, agentId: string): Promise<Switchboard> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
  await admin.auth.addPublicKey({ path: { agent_id: agentId }, body: { public_key: raw } });
  return new Switchboard({ url: admin.url, agentId, privateKey });
}

/** Deterministic bytes, generated a chunk at a time (never held whole), with their hash. */
function generated(size: number, chunkSize = 64 * 1024) {
  const hash = createHash('sha256');
  async function* chunks() {
    for (let offset = 0; offset < size; offset += chunkSize) {
      const chunk = Buffer.alloc(Math.min(chunkSize, size - offset), offset / chunkSize);
      hash.update(chunk);
      yield chunk;
    }
  }
  return { chunks, digest: () => hash.digest('hex') };
}

async function hashStream(stream: ReadableStream<Uint8Array>): Promise<{ sha256: string; size: number; chunks: number }> {
  const hash = createHash('sha256');
  let size = 0;
  let chunks = 0;
  for await (const chunk of stream) {
    hash.update(chunk);
    size += chunk.byteLength;
    chunks += 1;
  }
  return { sha256: hash.digest('hex'), size, chunks };
}

describeEachDialect('SDK client', (dialect) => {
  const server = useServer(dialect);
  const admin = () => new Switchboard({ url: server.url, apiKey: server.adminKey });

  it('authenticates with an API key and with Ed25519 signatures; refuses a wrong key', async () => {
    const key = await admin().auth.createKey({ body: { agent_id: 'sdk-bearer', role: 'agent', name: 'sdk' } });
    const bearer = new Switchboard({ url: server.url, apiKey: key.key });
    expect(await bearer.auth.whoami()).toMatchObject({ agent_id: 'sdk-bearer', role: 'agent' });

    const signing = await signer(admin(), 'sdk-signer');
    expect(await signing.auth.whoami()).toMatchObject({ agent_id: 'sdk-signer', role: 'agent' });
    // JSON bodies, query strings and path parameters are all covered by the signature.
    const sent = await signing.messaging.send({ body: { destination: 'sdk-bearer', event_name: 'hello', payload: { n: 1 } } });
    const { messages } = await bearer.messaging.receive({ query: { agent_id: 'sdk-bearer', timeout: 5 } });
    expect(messages).toMatchObject([{ message_id: sent.message_id, source: 'sdk-signer', payload: { n: 1 } }]);
    await bearer.messaging.acknowledge({ body: { message_id: sent.message_id } });
    await signing.discovery.heartbeat({ body: { agent_id: 'sdk-signer', load: 0.25 } });
    expect(await signing.discovery.agentHealth({ path: { agent_id: 'sdk-signer' } })).toMatchObject({
      agent_id: 'sdk-signer',
      status: 'healthy',
    });

    const { privateKey: unknownKey } = generateKeyPairSync('ed25519');
    const impostor = new Switchboard({ url: server.url, agentId: 'sdk-signer', privateKey: unknownKey });
    await expect(impostor.auth.whoami()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    await expect(new Switchboard({ url: server.url, apiKey: 'sk_not_a_key' }).auth.whoami()).rejects.toMatchObject({ status: 401 });
    // An agent acts only as itself.
    await expect(bearer.discovery.heartbeat({ body: { agent_id: 'sdk-signer' } })).rejects.toMatchObject({
      status: 403,
      code: 'forbidden',
    });
  });

  it('throws SwitchboardError with status, code, message, requestId and details', async () => {
    const missing = await admin()
      .tasks.get({ path: { id: 'tsk_missing' }, headers: { 'x-request-id': 'sdk-test-404' } })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(SwitchboardError);
    expect(missing).toBeInstanceOf(Error);
    expect(missing).toMatchObject({ name: 'SwitchboardError', status: 404, code: 'not_found', requestId: 'sdk-test-404' });
    expect((missing as SwitchboardError).message).toMatch(/tsk_missing|not found/i);

    // A body the types would refuse, sent anyway (as plain JavaScript could).
    const invalid = (await admin()
      .tasks.create({ body: { title: '', priority: 'critical' } as never })
      .catch((e: unknown) => e)) as SwitchboardError;
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(invalid.requestId).toMatch(/^req_/);
    expect(JSON.stringify(invalid.details)).toContain('priority');
    expect(JSON.stringify(invalid.details)).toContain('title');
  });

  it('iterates every page of paginated lists; other lists are one array', async () => {
    const client = admin();
    const names = ['p1', 'p2', 'p3', 'p4', 'p5'].map((n) => `pages-${n}`);
    for (const name of names) await client.projects.create({ body: { name } });
    const seen: string[] = [];
    for await (const project of client.projects.list.all({ query: { limit: 2 } })) seen.push(project.name);
    expect(seen).toEqual(names);

    const project = await client.projects.create({ body: { name: 'pages-tasks' } });
    const tasks = [];
    for (let i = 0; i < 7; i++)
      tasks.push(await client.tasks.create({ body: { title: `t${i}`, project_id: project.id, status: i % 2 ? 'todo' : 'done' } }));
    const todo: string[] = [];
    for await (const task of client.tasks.list.all({ query: { project_id: project.id, status: 'todo', limit: 2 } })) todo.push(task.id);
    expect(todo).toEqual(tasks.filter((_, i) => i % 2).map((t) => t.id));
    // Starting at an offset, and a page size over the total.
    const rest: string[] = [];
    for await (const task of client.tasks.list.all({ query: { project_id: project.id, offset: 5, limit: 500 } })) rest.push(task.id);
    expect(rest).toEqual(tasks.slice(5).map((t) => t.id));
    // One page with the server's total, as a paginated view shows it.
    const page = await client.tasks.list.page({ query: { project_id: project.id, status: 'todo', offset: 1, limit: 2 } });
    expect(page).toEqual({ items: todo.slice(1, 3).map((id) => expect.objectContaining({ id })), total: 3, limit: 2, offset: 1 });
    // A list that pages by cursor says where the next page starts; `.all()` follows it from there.
    const head = await client.tasks.list.page({ query: { project_id: project.id, limit: 3 } });
    expect(head.nextCursor).toEqual(expect.any(String));
    const after: string[] = [];
    for await (const task of client.tasks.list.all({ query: { project_id: project.id, cursor: head.nextCursor, limit: 2 } }))
      after.push(task.id);
    expect(after).toEqual(tasks.slice(3).map((t) => t.id));
    // Stopping early fetches no further pages (the iterator simply ends).
    for await (const task of client.tasks.list.all({ query: { project_id: project.id, limit: 1 } })) {
      expect(task.id).toBe(tasks[0]!.id);
      break;
    }

    await client.tasks.addDependency({ path: { id: tasks[1]!.id }, body: { depends_on: tasks[0]!.id } });
    expect(await client.tasks.listDependencies({ path: { id: tasks[1]!.id } })).toMatchObject([{ depends_on: tasks[0]!.id }]);
    expect('all' in client.tasks.listDependencies || 'page' in client.tasks.listDependencies).toBe(false);
  });

  it('pages a lookup, whose items are data.agents, and still answers a plain call with data', async () => {
    const client = admin();
    const ids = ['a', 'b', 'c'].map((n) => `sdk-lookup-${n}`);
    for (const id of ids) await client.discovery.registerCapability({ body: { agent_id: id, capability: 'sdk.lookup.paged' } });
    const query = { capability: 'sdk.lookup.paged', include_unhealthy: true };
    expect(await client.discovery.findAgents.page({ query: { ...query, limit: 2, offset: 1 } })).toEqual({
      items: ids.slice(1).map((agent_id) => expect.objectContaining({ agent_id })),
      total: 3,
      limit: 2,
      offset: 1,
    });
    const all: string[] = [];
    for await (const agent of client.discovery.findAgents.all({ query: { ...query, limit: 1 } })) all.push(agent.agent_id);
    expect(all).toEqual(ids);
    expect((await client.discovery.findAgents({ query })).agents.map((agent) => agent.agent_id)).toEqual(ids);
  });

  it('exposes every domain of the operation table, and reads and verifies the audit log with filters', async () => {
    const client = admin();
    for (const [domain, operations] of Object.entries(OPERATIONS)) {
      for (const name of Object.keys(operations))
        expect(typeof (client as unknown as Record<string, Record<string, unknown>>)[domain]?.[name], `${domain}.${name}`).toBe('function');
    }
    const project = await client.projects.create({ body: { name: 'sdk-audited' } });
    await client.projects.update({ path: { id: project.id }, body: { name: 'sdk-audited, renamed' } });
    const page = await client.audit.list.page({ query: { resource_id: project.id, limit: 1 } });
    expect(page).toMatchObject({
      total: 2,
      limit: 1,
      offset: 0,
      items: [{ action: 'project.update', actor: { kind: 'admin', id: 'admin' }, resource: { type: 'project', id: project.id } }],
    });
    const created = await client.audit.list({
      query: { resource_id: project.id, action: 'project.create', outcome: 'allowed', before: new Date(Date.now() + 60_000).toISOString() },
    });
    expect(created.map((entry) => entry.action)).toEqual(['project.create']);
    expect(await client.audit.list({ query: { resource_id: project.id, after: new Date(Date.now() + 60_000).toISOString() } })).toEqual([]);
    const verified = await client.audit.verify();
    expect(verified).toMatchObject({ ok: true, anchor: null });
    expect(verified.checked).toBeGreaterThanOrEqual(2);
    expect(verified.first_broken).toBeUndefined();
  });

  it('calls hooks with a path of several segments, and routine webhooks without credentials', async () => {
    const signing = await signer(admin(), 'sdk-hooks');
    await signing.coordination.createPlan({
      body: { alias: 'sdk-hook-plan', steps: [{ id: 'echo', type: 'transform', output: { repo: '{{input.repo}}' } }] },
    });
    await signing.coordination.createTrigger({
      body: {
        plan_id: 'sdk-hook-plan',
        type: 'webhook',
        config: { path: 'sdk/push' },
        input_mapping: { repo: '{{event.repository}}', ref: '{{event.ref}}' },
      },
    });
    const started = await signing.coordination.hookPost({
      path: { path: 'sdk/push' },
      query: { ref: 'main' },
      body: { repository: 'switchboard' },
    });
    const run = await waitFor(async () => {
      const current = await signing.coordination.getRun({ path: { run_id: started.run_id! } });
      return current.status === 'completed' ? current : undefined;
    }, 10_000);
    expect(run.input).toEqual({ repo: 'switchboard', ref: 'main' });

    const routine = await admin().routines.create({ body: { name: 'sdk webhook', trigger_type: 'webhook', target_agent: 'sdk-hooks' } });
    const fired = await signing.routines.webhook({ path: { token: routine.webhook_token! }, body: { from: 'webhook' } });
    expect(await admin().routines.getExecution({ path: { id: fired.execution_id! } })).toMatchObject({
      trigger: 'webhook',
      routine_id: routine.id,
    });
  });

  it('without credentials calls the public operations (an approval link) and gets 401 from the others', async () => {
    const anonymous = new Switchboard({ url: server.url });
    const client = admin();
    await client.coordination.createPlan({
      body: { alias: 'sdk-link-plan', steps: [{ id: 'gate', type: 'human_approval', prompt: 'Go?' }] },
    });
    const run = await client.coordination.startRun({ body: { plan_id: 'sdk-link-plan' } });
    await client.auth.createUser({ body: { username: 'sdk-link-person', role: 'approver', password: 'correct horse battery' } });
    const link = await client.coordination.createApprovalLink({
      path: { run_id: run.id, step_id: 'gate' },
      body: { approver: 'user:sdk-link-person' },
    });
    const token = link.approve_url.slice(link.approve_url.lastIndexOf('/') + 1);
    expect(await anonymous.coordination.getApprovalLink({ path: { token } })).toMatchObject({ run_id: run.id, prompt: 'Go?' });
    expect(await anonymous.coordination.decideByLink({ path: { token }, body: { approved: true } })).toMatchObject({ status: 'completed' });
    await expect(anonymous.auth.whoami()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('streams artifact uploads and downloads with either kind of credentials', async () => {
    const bearer = admin();
    const signing = await signer(bearer, 'sdk-streamer');
    for (const client of [bearer, signing]) {
      // Raw bytes of a known size through an upload URL: read from the generator as they are sent.
      const size = 3 * 1024 * 1024 + 17;
      const source = generated(size);
      const artifact = await client.artifacts.uploadStream({
        name: 'big.bin',
        content_type: 'application/octet-stream',
        size_bytes: size,
        body: source.chunks(),
      });
      expect(artifact).toMatchObject({ name: 'big.bin', size_bytes: size, sha256: source.digest() });
      const downloaded = await hashStream(await client.artifacts.downloadStream({ artifact_id: artifact.id }));
      expect(downloaded).toMatchObject({ sha256: artifact.sha256, size });
      expect(downloaded.chunks).toBeGreaterThan(1);

      // A multipart form whose file part is read from disk when sent (signed: hashed in a first pass).
      const dir = await mkdtemp(join(tmpdir(), 'sdk-artifacts-'));
      try {
        const path = join(dir, 'notes.txt');
        await writeFile(path, 'first line\n'.repeat(50_000));
        const form = new FormData();
        form.set('file', await openAsBlob(path, { type: 'text/plain' }), 'notes.txt');
        form.set('metadata', JSON.stringify({ kind: 'notes' }));
        const notes = await client.artifacts.upload({ body: form });
        expect(notes).toMatchObject({ name: 'notes.txt', size_bytes: 550_000, metadata: { kind: 'notes' } });
        const second = new FormData();
        second.set('file', new Blob(['second version']), 'notes.txt');
        expect(await client.artifacts.uploadVersion({ path: { artifact_id: notes.id }, body: second })).toMatchObject({ version: 2 });
        const response = await client.artifacts.download({
          path: { artifact_id: notes.id },
          query: { version: 1 },
          headers: { range: 'bytes=0-9' },
        });
        expect(response.status).toBe(206);
        expect(await response.text()).toBe('first line');
        // A signed URL is fetched without credentials, by the same client.
        const signed = await client.artifacts.createSignedUrl({ path: { artifact_id: notes.id }, body: { expires_in: 60 } });
        const url = new URL(signed.url);
        const viaUrl = await client.artifacts.downloadSigned({
          path: { artifact_id: notes.id, version: signed.version },
          query: { expires: Number(url.searchParams.get('expires')), signature: url.searchParams.get('signature')! },
        });
        expect(await viaUrl.text()).toBe('second version');
        // A JSON artifact is downloaded as its bytes too (application/json, but no envelope).
        const snippet = await client.artifacts.createSnippet({ body: { name: 'result.json', content: { verdict: 'ok' } } });
        const json = await client.artifacts.download({ path: { artifact_id: snippet.id } });
        expect(await json.json()).toEqual({ verdict: 'ok' });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  }, 60_000);
});

describe('SDK client retries against a rate-limited server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer('sqlite', { env: { SWITCHBOARD_RATE_LIMIT: '3', SWITCHBOARD_RATE_WINDOW_S: '1' } });
  });
  afterAll(() => server.close());

  it('waits for Retry-After on 429, for reads and writes alike, and every call succeeds once', async () => {
    const events: RetryEvent[] = [];
    const client = new Switchboard({ url: server.url, apiKey: server.adminKey, retries: 20, onRetry: (event) => events.push(event) });
    const titles = Array.from({ length: 8 }, (_, i) => `rate-limited ${i}`);
    const created = await Promise.all(titles.map((title) => client.tasks.create({ body: { title } })));
    expect(created.map((t) => t.title)).toEqual(titles);
    const reads = await Promise.all(created.map((t) => client.tasks.get({ path: { id: t.id } })));
    expect(reads.map((t) => t.id)).toEqual(created.map((t) => t.id));
    // 16 calls against 3 per second: some were refused and retried, each after the server's Retry-After.
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) {
      expect(event.status).toBe(429);
      expect(event.retryAfter).toMatch(/^[1-9]\d*$/);
      expect(event.delayMs).toBe(Number(event.retryAfter) * 1000);
    }
    expect(events.some((e) => e.method === 'POST')).toBe(true);
    // Retried POSTs did not create twice.
    const all = [];
    for await (const task of client.tasks.list.all({ query: { limit: 500 } })) all.push(task);
    expect(all.filter((t) => t.title.startsWith('rate-limited')).length).toBe(8);
  }, 60_000);
});

describe('SDK client retries on server errors (a stand-in server answers the statuses under test)', () => {
  const replies: Array<{ status: number; headers?: Record<string, string>; body?: string }> = [];
  const seen: string[] = [];
  let url = '';
  /** The size of each request's body, read to its end before the answer. */
  const bodyBytes: number[] = [];
  const fake = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(`${req.method} ${req.url}`);
    let length = 0;
    req.on('data', (chunk: Buffer) => (length += chunk.length));
    req.on('end', () => {
      bodyBytes.push(length);
      const reply = replies.shift() ?? { status: 500 };
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(
        reply.body ??
          JSON.stringify(
            reply.status < 400
              ? { data: { ok: true }, meta: {} }
              : { error: { code: 'busy', message: `status ${reply.status}` }, meta: { request_id: 'req_fake' } },
          ),
      );
    });
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => fake.close(() => resolve())));
  const client = (events: RetryEvent[] = [], retries = 3) =>
    new Switchboard({ url, apiKey: 'sk_fake', retries, maxBackoffMs: 1, onRetry: (e) => events.push(e) });

  it('retries 5xx for GET, PUT and DELETE, never for POST or PATCH', async () => {
    const events: RetryEvent[] = [];
    seen.length = 0;
    replies.push({ status: 503 }, { status: 500 }, { status: 200 });
    expect(await client(events).auth.whoami()).toEqual({ ok: true });
    replies.push({ status: 502 }, { status: 200 });
    expect(await client(events).projects.update({ path: { id: 'prj_1' }, body: { name: 'n' } })).toEqual({ ok: true });
    replies.push({ status: 503 }, { status: 200 });
    expect(await client(events).tasks.delete({ path: { id: 'tsk_1' } })).toEqual({ ok: true });
    expect(events.map((e) => [e.method, e.status])).toEqual([
      ['GET', 503],
      ['GET', 500],
      ['PUT', 502],
      ['DELETE', 503],
    ]);

    events.length = 0;
    seen.length = 0;
    replies.push({ status: 503 }, { status: 500 });
    await expect(client(events).messaging.send({ body: { destination: 'a', event_name: 'e' } })).rejects.toMatchObject({
      status: 503,
      code: 'busy',
      requestId: 'req_fake',
    });
    await expect(client(events).tasks.update({ path: { id: 'tsk_1' }, body: { title: 't' } })).rejects.toMatchObject({ status: 500 });
    expect(seen).toEqual(['POST /api/v1/messaging/send', 'PATCH /core/api/v1/tasks/tsk_1']);
    expect(events).toEqual([]);
  });

  it('sends bytes whole again on each retry (the Node client streams them, a stream is read once)', async () => {
    const events: RetryEvent[] = [];
    bodyBytes.length = 0;
    replies.push({ status: 503 }, { status: 200 });
    const bytes = new Uint8Array(3 * 1024 * 1024 + 5).fill(7);
    await client(events).artifacts.putUpload({ path: { upload_id: 'upl_1' }, query: { expires: 1, signature: 's' }, body: bytes });
    expect(bodyBytes).toEqual([bytes.length, bytes.length]);
    expect(events.map((e) => [e.method, e.status])).toEqual([['PUT', 503]]);
  });

  it('retries a send that carries an idempotency key on 503, after Retry-After, like a GET', async () => {
    const events: RetryEvent[] = [];
    seen.length = 0;
    replies.push({ status: 503, headers: { 'retry-after': '0' } }, { status: 201 });
    const body = { destination: 'a', event_name: 'e', idempotency_key: 'order-1' };
    expect(await client(events).messaging.send({ body })).toEqual({ ok: true });
    expect(seen).toEqual(['POST /api/v1/messaging/send', 'POST /api/v1/messaging/send']);
    expect(events).toMatchObject([{ method: 'POST', status: 503, retryAfter: '0', delayMs: 0 }]);
  });

  it('gives up after `retries` attempts with the last error; a page without an envelope still becomes a SwitchboardError', async () => {
    const events: RetryEvent[] = [];
    seen.length = 0;
    replies.push(
      { status: 503 },
      { status: 503 },
      { status: 504, headers: { 'content-type': 'text/html', 'x-request-id': 'req_proxy' }, body: '<h1>Gateway Timeout</h1>' },
    );
    const error = await client(events, 2)
      .auth.whoami()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchboardError);
    expect(error).toMatchObject({ status: 504, code: 'http_error', message: '<h1>Gateway Timeout</h1>', requestId: 'req_proxy' });
    expect(seen.length).toBe(3);
    expect(events.map((e) => e.attempt)).toEqual([0, 1]);
  });

  it('retries a 429 for any method, after Retry-After given in seconds or as a date', async () => {
    const events: RetryEvent[] = [];
    seen.length = 0;
    replies.push({ status: 429, headers: { 'retry-after': '0' } }, { status: 200 });
    expect(await client(events).messaging.send({ body: { destination: 'a', event_name: 'e' } })).toEqual({ ok: true });
    expect(seen).toEqual(['POST /api/v1/messaging/send', 'POST /api/v1/messaging/send']);
    expect(events).toMatchObject([{ method: 'POST', status: 429, retryAfter: '0', delayMs: 0 }]);

    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs('2', now)).toBe(2000);
    expect(retryAfterMs('Tue, 01 Jan 2030 00:00:03 GMT', now)).toBe(3000);
    expect(retryAfterMs('Mon, 31 Dec 2029 23:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });

  it('retries network errors only for idempotent methods', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const events: RetryEvent[] = [];
    const unreachable = new Switchboard({
      url: `http://127.0.0.1:${port}`,
      apiKey: 'sk_fake',
      retries: 2,
      maxBackoffMs: 1,
      onRetry: (e) => events.push(e),
    });
    await expect(unreachable.auth.whoami()).rejects.toThrow();
    expect(events.map((e) => [e.method, e.attempt, e.status])).toEqual([
      ['GET', 0, undefined],
      ['GET', 1, undefined],
    ]);
    events.length = 0;
    await expect(unreachable.messaging.send({ body: { destination: 'a', event_name: 'e' } })).rejects.toThrow();
    expect(events).toEqual([]);
  });
});
