import { randomBytes } from 'node:crypto';
import { expect, it, vi } from 'vitest';
import { MessagingStore } from '../../src/messaging/store.js';
import WebSocket from 'ws';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startPartialRequest } from '../helpers/partial-request.js';
import { startServer, useServer } from '../helpers/server.js';
import { keyPair, signedHeaders } from '../helpers/signing.js';
import { waitFor, within } from '../helpers/wait.js';

const M = '/api/v1/messaging';
const CHANNEL = `${M}/channel`;
/** The frame limit of the servers below (SWITCHBOARD_MAX_JSON_BYTES). */
const MAX_FRAME = 65_536;

type Frame = Record<string, any>;

/** A WebSocket client of the channel: every frame it got, in order, and a way to wait for the next ones. */
interface Conn {
  readonly socket: WebSocket;
  readonly frames: Frame[];
  /** Message frames so far. */
  messages(): any[];
  /** Sends a frame (an object is JSON-encoded, a string or Buffer goes as it is). */
  write(frame: unknown): void;
  /** Sends a request frame with the next id and resolves with its answer. */
  request(kind: string, body: unknown, extra?: Frame): Promise<Frame>;
  /** Resolves with the first frame (from the start) that `match` accepts. */
  frame(match: (frame: Frame) => boolean): Promise<Frame>;
  closed: Promise<{ code: number; reason: string }>;
}

function wsUrl(httpUrl: string, path: string): string {
  return httpUrl.replace(/^http/, 'ws') + path;
}

function connect(httpUrl: string, path: string, headers: Record<string, string>): Promise<Conn> {
  const socket = new WebSocket(wsUrl(httpUrl, path), { headers });
  const frames: Frame[] = [];
  const waiters = new Set<() => void>();
  let nextId = 1;
  socket.on('message', (data) => {
    frames.push(JSON.parse(String(data)) as Frame);
    for (const waiter of waiters) waiter();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  const conn: Conn = {
    socket,
    frames,
    closed,
    messages: () => frames.filter((f) => 'message' in f).map((f) => f.message),
    write: (frame) => socket.send(typeof frame === 'string' || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame)),
    frame(match) {
      const found = () => frames.find(match);
      return within(
        new Promise<Frame>((resolve) => {
          const check = () => {
            const frame = found();
            if (!frame) return;
            waiters.delete(check);
            resolve(frame);
          };
          waiters.add(check);
          check();
        }),
        10_000,
        `matching frame (got ${JSON.stringify(frames).slice(0, 2000)})`,
      );
    },
    request(kind, body, extra = {}) {
      const id = nextId++;
      conn.write({ id, [kind]: body, ...extra });
      return conn.frame((f) => f.id === id);
    },
  };
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(conn));
    socket.once('error', reject);
  });
}

/** The HTTP status an upgrade request is answered with (101 when it succeeds). */
function upgradeStatus(httpUrl: string, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl(httpUrl, path), { headers });
    socket.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      socket.terminate();
    });
    socket.once('open', () => {
      resolve(101);
      socket.close();
    });
    socket.once('error', (err) => (err.message.includes('Unexpected server response') ? undefined : reject(err)));
  });
}

describeEachDialect('the agent channel', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_MAX_JSON_BYTES: String(MAX_FRAME) } });
  const keys = new Map<string, string>();
  /** An agent key (one per agent id). */
  async function keyOf(agentId: string): Promise<string> {
    let key = keys.get(agentId);
    if (!key) {
      const res = await server.api.post('/api/v1/auth/keys', { agent_id: agentId, role: 'agent' });
      keys.set(agentId, (key = res.body.data.key as string));
    }
    return key;
  }
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  const open = async (agentId: string, query = '') => connect(server.url, `${CHANNEL}${query}`, bearer(await keyOf(agentId)));
  const sendHttp = async (destination: string, payload: unknown, extra: Frame = {}) => {
    const res = await server.api.post(`${M}/send`, { destination, event_name: 'work', payload, ...extra });
    expect(res.status).toBe(201);
    return res.body.data.message_id as string;
  };
  const inbox = async (agentId: string) => (await server.api.get(`${M}/inboxes?agent_id=${agentId}`)).body.data[0];

  it('pushes a message as it arrives: the very object receive returns, leased as receive leases it', async () => {
    const conn = await open('push-1');
    try {
      conn.write({ credit: 10 });
      const id = await sendHttp('push-1', { n: 1 });
      const [message] = [(await conn.frame((f) => 'message' in f)).message];
      expect(message).toMatchObject({
        message_id: id,
        source: expect.any(String),
        destination: 'push-1',
        event_name: 'work',
        payload: { n: 1 },
        status: 'delivered',
        retry_count: 0,
      });
      expect(Object.keys(message).sort()).toEqual(
        [
          'delivery_semantic',
          'destination',
          'event_name',
          'fairness_key',
          'message_id',
          'ordering_key',
          'payload',
          'priority',
          'redriven_from',
          'retry_count',
          'source',
          'status',
          'thread_id',
          'timestamp',
          'traceparent',
        ].sort(),
      );
      const leased = (await server.api.get(`${M}/inboxes/push-1/messages?state=leased`)).body.data;
      expect(leased.map((m: any) => m.message_id)).toEqual([id]);
      // Its lease is the default visibility timeout (30 s).
      const expires = Date.parse(leased[0].lease_expires_at) - Date.parse(message.timestamp);
      expect(expires).toBeGreaterThan(25_000);
    } finally {
      conn.socket.close();
    }
  });

  it('claims once per message that arrives alone: after a claim that drained the inbox it waits for a wake-up', async () => {
    const conn = await open('one-claim');
    const claims = vi.spyOn(MessagingStore.prototype, 'claim');
    try {
      conn.write({ credit: 100 });
      // The push loop's first look finds nothing; then each message is a wake-up and one claim.
      await waitFor(() => claims.mock.calls.some(([lease]) => lease.destination === 'one-claim'), 5_000, 5);
      for (let n = 1; n <= 10; n++) {
        await sendHttp('one-claim', { n });
        await conn.frame((f) => f.message?.payload?.n === n);
      }
      const mine = claims.mock.calls.filter(([lease]) => lease.destination === 'one-claim');
      // Without the held registration each message cost a claim and an empty one after it (21).
      expect(mine.length).toBeLessThanOrEqual(12);
      // And a message sent while the loop was pushing is not missed.
      await Promise.all([sendHttp('one-claim', { n: 11 }), sendHttp('one-claim', { n: 12 })]);
      await conn.frame((f) => f.message?.payload?.n === 12);
      await conn.frame((f) => f.message?.payload?.n === 11);
    } finally {
      claims.mockRestore();
      conn.socket.close();
    }
  });

  it('pushes and acks a message at a time with no next-visible lookup and, on PostgreSQL, no transaction per ack', async () => {
    const conn = await open('lean-1');
    const lookups = vi.spyOn(MessagingStore.prototype, 'nextVisibleAt');
    const transactionalAcks = vi.spyOn(MessagingStore.prototype, 'acknowledgeReceived');
    try {
      conn.write({ credit: 100 });
      await waitFor(() => lookups.mock.calls.some(([, destination]) => destination === 'lean-1'), 5_000, 5);
      for (let n = 1; n <= 10; n++) {
        const id = await sendHttp('lean-1', { n });
        await conn.frame((f) => f.message?.message_id === id);
        expect((await conn.request('ack', [id])).ok).toEqual({ acknowledged: [id], failed: [] });
      }
      // The first look found nothing and asked once; each push after that asked nothing (was 11).
      expect(lookups.mock.calls.filter(([, destination]) => destination === 'lean-1').length).toBeLessThanOrEqual(2);
      // One statement acknowledges them, outside a transaction (SQLite has no round trips to save).
      if (dialect === 'postgres') expect(transactionalAcks).not.toHaveBeenCalled();
      expect(await inbox('lean-1')).toMatchObject({ pending: 0, leased: 0 });
      // Acked already, or someone else's: refused with its reason, as before.
      const again = await conn.request('ack', [conn.messages()[0].message_id]);
      expect(again.ok.failed).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'conflict' }) })]);
      const other = await sendHttp('lean-2', {});
      const foreign = await conn.request('ack', [other]);
      expect(foreign.ok.failed).toEqual([{ message_id: other, error: expect.objectContaining({ code: 'forbidden' }) }]);
    } finally {
      lookups.mockRestore();
      transactionalAcks.mockRestore();
      conn.socket.close();
    }
  });

  it('respects credit: granted 2 of 5 it gets exactly 2, in order, until more credit comes', async () => {
    for (let i = 0; i < 5; i++) await sendHttp('credit-1', { i });
    const conn = await open('credit-1');
    try {
      conn.write({ credit: 2 });
      await waitFor(() => conn.messages().length >= 2);
      // A request answered after the pushes: the server had every chance to push a third.
      expect((await conn.request('heartbeat', {})).ok).toBeDefined();
      expect(conn.messages().map((m) => m.payload.i)).toEqual([0, 1]);
      expect(await inbox('credit-1')).toMatchObject({ pending: 3, leased: 2 });
      conn.write({ credit: 3 });
      await waitFor(() => conn.messages().length >= 5);
      expect(conn.messages().map((m) => m.payload.i)).toEqual([0, 1, 2, 3, 4]);
      expect(await inbox('credit-1')).toMatchObject({ pending: 0, leased: 5 });
      // Credit beyond the window's cap is refused; the window stays as it was.
      conn.write({ credit: 1000 });
      conn.write({ credit: 1 });
      expect((await conn.frame((f) => 'error' in f && !('id' in f))).error).toMatchObject({ code: 'invalid_request' });
    } finally {
      conn.socket.close();
    }
  });

  it('acks, rejects and extends in batches; a refused item fails alone', async () => {
    const ids = [await sendHttp('settle-1', { i: 0 }), await sendHttp('settle-1', { i: 1 }), await sendHttp('settle-1', { i: 2 })];
    const conn = await open('settle-1', '?visibility_timeout=60');
    try {
      conn.write({ credit: 3 });
      await waitFor(() => conn.messages().length === 3);
      const extended = await conn.request(
        'extend',
        ids.slice(0, 2).map((message_id) => ({ message_id, visibility_timeout: 120 })),
      );
      expect(extended.ok.extended.map((e: any) => e.message_id)).toEqual(ids.slice(0, 2));
      expect(extended.ok.failed).toEqual([]);
      const acked = await conn.request('ack', [ids[0], { message_id: ids[1], output: { done: true } }]);
      expect(acked.ok).toEqual({ acknowledged: [ids[0], ids[1]], failed: [] });
      const rejected = await conn.request('reject', [{ message_id: ids[2], reason: 'no good', requeue: false }]);
      expect(rejected.ok.rejected).toEqual([{ message_id: ids[2], status: 'dead_lettered', retry_at: null }]);
      // Settled already: that item fails, the unknown one too, each with its own code.
      const again = await conn.request('ack', [ids[0], 'msg_unknown']);
      expect(again.ok.acknowledged).toEqual([]);
      expect(again.ok.failed).toEqual([
        { message_id: ids[0], error: expect.objectContaining({ code: 'conflict' }) },
        { message_id: 'msg_unknown', error: expect.objectContaining({ code: 'not_found' }) },
      ]);
      expect((await conn.request('ack', [ids[0], { message_id: ids[0] }])).error).toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining('repeat'),
      });
      const dead = (await server.api.get(`${M}/dead-letters?agent_id=settle-1`)).body.data;
      expect(dead.map((d: any) => [d.message_id, d.reason])).toEqual([[ids[2], 'no good']]);
      expect(await inbox('settle-1')).toMatchObject({ pending: 0, leased: 0, dead_letters: 1 });
    } finally {
      conn.socket.close();
    }
  });

  it('leaves what a dropped channel leased to its visibility timeout: redelivered after it, not at once', async () => {
    const conn = await open('drop-1', '?visibility_timeout=2');
    conn.write({ credit: 1 });
    const id = await sendHttp('drop-1', { x: 1 });
    await conn.frame((f) => f.message?.message_id === id);
    conn.socket.terminate();
    await conn.closed;
    const agent = server.api.withKey(await keyOf('drop-1'));
    // Still leased right after the drop: a receive finds nothing.
    expect((await agent.get(`${M}/receive?timeout=0`)).body.data.messages).toEqual([]);
    expect(await inbox('drop-1')).toMatchObject({ leased: 1 });
    const again = (await agent.get(`${M}/receive?timeout=10`)).body.data.messages;
    expect(again).toMatchObject([{ message_id: id, retry_count: 1 }]);
  });

  it('sends, batch-sends and subscribes as its agent; an idempotency key replays the first send', async () => {
    const conn = await open('sender-1');
    const target = await open('target-1');
    try {
      target.write({ credit: 10 });
      const body = { destination: 'target-1', event_name: 'hello', payload: { a: 1 }, idempotency_key: 'k-1' };
      const first = await conn.request('send', body);
      const second = await conn.request('send', body);
      expect(first.ok).toMatchObject({ message_id: expect.stringMatching(/^msg_/), status: 'sent' });
      expect(second.ok.message_id).toBe(first.ok.message_id);
      const pushed = (await target.frame((f) => f.message?.message_id === first.ok.message_id)).message;
      expect(pushed).toMatchObject({ source: 'sender-1', event_name: 'hello' });
      const batch = await conn.request('send_batch', {
        messages: [
          { destination: 'target-1', event_name: 'b', payload: 1 },
          { destination: 'target-1', event_name: 'b', payload: 2 },
        ],
      });
      expect(batch.ok.messages).toHaveLength(2);
      const subscribed = await target.request('subscribe', { agent_id: 'target-1', topic: 'news.*' });
      expect(subscribed.ok).toMatchObject({ agent_id: 'target-1', topic: 'news.*' });
      await server.api.post(`${M}/publish`, { topic: 'news.today', payload: { headline: 'x' } });
      await target.frame((f) => f.message?.event_name === 'news.today');
      // One message for the two identical sends.
      expect(target.messages().filter((m) => m.event_name === 'hello')).toHaveLength(1);
      expect((await inbox('target-1')).leased).toBe(4);
    } finally {
      conn.socket.close();
      target.socket.close();
    }
  });

  it('sends a payload by reference: an artifact its agent may read, never beside a payload', async () => {
    const conn = await open('ref-sender');
    const target = await open('ref-target');
    try {
      target.write({ credit: 10 });
      const sender = server.api.withKey(await keyOf('ref-sender'));
      const content = { doc: 'r'.repeat(3000) };
      const snippet = await sender.post('/api/v1/artifacts/snippets', { name: 'doc.json', content, metadata: { claim_check: true } });
      expect(snippet.status, snippet.text).toBe(201);
      const artifactId = snippet.body.data.id as string;
      const sent = await conn.request('send', { destination: 'ref-target', event_name: 'ref', payload_ref: { artifact_id: artifactId } });
      expect(sent.ok, JSON.stringify(sent)).toMatchObject({ status: 'sent' });
      const pushed = (await target.frame((f) => f.message?.message_id === sent.ok.message_id)).message;
      expect(pushed.payload).toBeNull();
      expect(pushed.payload_ref).toMatchObject({
        artifact_id: artifactId,
        size_bytes: snippet.body.data.size_bytes,
        sha256: snippet.body.data.sha256,
      });
      const fetched = await fetch(pushed.payload_ref.url as string);
      expect(await fetched.json()).toEqual(content);

      const both = await conn.request('send', {
        destination: 'ref-target',
        event_name: 'ref',
        payload: {},
        payload_ref: { artifact_id: artifactId },
      });
      expect(both.error).toMatchObject({ code: 'invalid_request' });
      const other = server.api.withKey(await keyOf('ref-other'));
      const foreign = await other.post('/api/v1/artifacts/snippets', { name: 'other.json', content: { o: 1 } });
      const forbidden = await conn.request('send', {
        destination: 'ref-target',
        event_name: 'ref',
        payload_ref: { artifact_id: foreign.body.data.id },
      });
      expect(forbidden.error).toMatchObject({ code: 'forbidden' });
      const unknown = await conn.request('send', {
        destination: 'ref-target',
        event_name: 'ref',
        payload_ref: { artifact_id: 'art_missing' },
      });
      expect(unknown.error).toMatchObject({ code: 'not_found' });
      const malformed = await conn.request('send', { destination: 'ref-target', event_name: 'ref', payload_ref: { id: artifactId } });
      expect(malformed.error).toMatchObject({ code: 'invalid_request' });
      expect(target.messages().filter((m) => m.event_name === 'ref')).toHaveLength(1);
    } finally {
      conn.socket.close();
      target.socket.close();
    }
  });

  it('heartbeat frames update discovery health', async () => {
    const conn = await open('beating-1');
    try {
      const beat = await conn.request('heartbeat', { load: 0.25 });
      expect(beat.ok).toMatchObject({ agent_id: 'beating-1', status: 'healthy', load: 0.25 });
      const health = await server.api.get('/api/v1/discovery/agents/beating-1/health');
      expect(health.body.data).toMatchObject({ status: 'healthy', load: 0.25 });
    } finally {
      conn.socket.close();
    }
  });

  it('authenticates the upgrade like any request: 401 without a key, a signed upgrade works, and an admin key names its agent', async () => {
    expect(await upgradeStatus(server.url, CHANNEL, {})).toBe(401);
    expect(await upgradeStatus(server.url, CHANNEL, bearer('sk_wrong'))).toBe(401);
    // An admin key acts for the agent it names, and must name one.
    expect(await upgradeStatus(server.url, CHANNEL, bearer(server.adminKey))).toBe(400);
    // Without an upgrade: the envelope says what the route is.
    const plain = await server.api.get(`${CHANNEL}?agent_id=plain-1`);
    expect(plain.status).toBe(400);
    expect(plain.body.error.message).toContain('WebSocket');
    const admin = await connect(server.url, `${CHANNEL}?agent_id=admin-for-1`, bearer(server.adminKey));
    try {
      const sent = await admin.request('send', { destination: 'somebody', event_name: 'x' });
      const [message] = (await server.api.get(`${M}/inboxes/somebody/messages`)).body.data.filter(
        (m: any) => m.message_id === sent.ok.message_id,
      );
      expect(message.source).toBe('admin-for-1');
    } finally {
      admin.socket.close();
    }
    const pair = keyPair();
    expect((await server.api.post('/api/v1/auth/agents/signer-1/public-keys', { public_key: pair.raw })).status).toBe(201);
    const path = `${CHANNEL}?visibility_timeout=5`;
    const signed = await connect(server.url, path, signedHeaders(pair.privateKey, 'signer-1', 'GET', path));
    try {
      const id = await sendHttp('signer-1', { s: 1 });
      signed.write({ credit: 1 });
      await signed.frame((f) => f.message?.message_id === id);
    } finally {
      signed.socket.close();
    }
    // A signature over another path does not open this one.
    expect(await upgradeStatus(server.url, CHANNEL, signedHeaders(pair.privateKey, 'signer-1', 'GET', path))).toBe(401);
  });

  it('refuses acting as another agent: 403 on the upgrade, error frames for sends and subscriptions, failed items for its messages', async () => {
    expect(await upgradeStatus(server.url, `${CHANNEL}?agent_id=victim-1`, bearer(await keyOf('mallory-1')))).toBe(403);
    const conn = await open('mallory-1', '?agent_id=mallory-1');
    try {
      const spoofed = await conn.request('send', { destination: 'victim-1', event_name: 'x', source: 'victim-1' });
      expect(spoofed.error).toMatchObject({ code: 'forbidden' });
      const subscribe = await conn.request('subscribe', { agent_id: 'victim-1', topic: 'x' });
      expect(subscribe.error).toMatchObject({ code: 'forbidden' });
      // A message the victim received: mallory may not settle it.
      const id = await sendHttp('victim-1', {});
      const victim = server.api.withKey(await keyOf('victim-1'));
      expect((await victim.get(`${M}/receive`)).body.data.messages).toHaveLength(1);
      for (const [kind, body] of [
        ['ack', [id]],
        ['reject', [{ message_id: id, reason: 'r' }]],
        ['extend', [{ message_id: id, visibility_timeout: 10 }]],
      ] as const) {
        const answer = await conn.request(kind, body);
        expect(answer.ok.failed).toEqual([{ message_id: id, error: expect.objectContaining({ code: 'forbidden' }) }]);
      }
      // Its own source is fine.
      expect((await conn.request('send', { destination: 'victim-1', event_name: 'x', source: 'mallory-1' })).ok.status).toBe('sent');
    } finally {
      conn.socket.close();
    }
  });

  it('answers bad frames with error frames and stays open; a frame past twice the limit closes with 1009', async () => {
    const conn = await open('bad-1');
    try {
      conn.write('{not json');
      const parse = await conn.frame((f) => 'error' in f);
      expect(parse).toEqual({ error: expect.objectContaining({ code: 'invalid_request', message: expect.stringContaining('not JSON') }) });
      conn.write({ id: 7, bogus: true });
      expect((await conn.frame((f) => f.id === 7)).error).toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining('must have one of'),
      });
      const badField = await conn.request('send', { destination: 'x' });
      expect(badField.error.code).toBe('invalid_request');
      expect(badField.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'send.event_name' })]));
      const extra = await conn.request('heartbeat', { agent_id: 'bad-1' });
      expect(extra.error.code).toBe('invalid_request');
      const nul = await conn.request('send', { destination: 'x', event_name: 'e', payload: 'a\u0000b' });
      expect(nul.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('NUL') });
      const lone = await conn.request('send', { destination: 'x', event_name: 'e', payload: 'a\udc00b' });
      expect(lone.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('unpaired surrogate') });
      conn.write({ credit: 0 });
      conn.write([1, 2]);
      conn.write(Buffer.from('{"credit":1}'));
      conn.write(
        '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
      );
      // Too big to be read: answered without its id.
      const big = { destination: 'x', event_name: 'e', payload: 'y'.repeat(MAX_FRAME) };
      conn.write({ id: 98, send: big });
      await conn.frame((f) => f.error?.code === 'payload_too_large');
      expect(conn.frames.filter((f) => 'error' in f && !('id' in f)).map((f) => f.error.code)).toEqual([
        'invalid_request',
        'invalid_request',
        'invalid_request',
        'invalid_request',
        'invalid_request',
        'payload_too_large',
      ]);
      // Still open and working.
      expect((await conn.request('heartbeat', {})).ok.status).toBe('healthy');
      conn.write({ id: 99, send: { ...big, payload: 'y'.repeat(2 * MAX_FRAME) } });
      expect((await conn.closed).code).toBe(1009);
    } finally {
      conn.socket.terminate();
    }
  });

  it('counts request frames against the rate limit; outlives the request timeout; closes with 1001 at shutdown', async () => {
    const limited = await startServer(dialect, {
      env: { SWITCHBOARD_RATE_LIMIT: '5', SWITCHBOARD_RATE_WINDOW_S: '3600', SWITCHBOARD_REQUEST_TIMEOUT_S: '1' },
    });
    try {
      const key = (await limited.api.post('/api/v1/auth/keys', { agent_id: 'limited-1', role: 'agent' })).body.data.key as string;
      // The upgrade is one request of the five.
      const conn = await connect(limited.url, CHANNEL, bearer(key));
      try {
        // The 1 s request timeout cuts a request opened after the channel whose body never comes:
        // once it has, the channel has outlived the timeout too (an upgraded connection is no request).
        const stalled = startPartialRequest(
          `${limited.url}${M}/send`,
          'POST',
          { authorization: `Bearer ${limited.adminKey}`, 'content-type': 'application/json' },
          64,
          Buffer.from('{'),
        );
        expect((await within(stalled.answer, 10_000, 'the stalled request to time out')).status).toBe(408);
        stalled.request.destroy();
        const answers: Frame[] = [];
        for (let i = 0; i < 5; i++) answers.push(await conn.request('heartbeat', {}));
        expect(answers.map((a) => (a.ok ? 'ok' : a.error.code))).toEqual(['ok', 'ok', 'ok', 'ok', 'rate_limited']);
        // A server shutting down says so.
        await limited.close();
        expect(await conn.closed).toEqual({ code: 1001, reason: 'server shutting down' });
      } finally {
        conn.socket.terminate();
      }
    } finally {
      await limited.close();
    }
  });
});

describeEachDialect('the agent channel across nodes', (dialect) => {
  const database = useTestDatabase(dialect);
  const cluster = dialect === 'postgres';

  it.skipIf(!cluster)(
    'delivers a message sent on node A to a channel on node B, woken by the notifier',
    async () => {
      const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;
      const a = await startServer(dialect, { database: database(), adminKey });
      const b = await startServer(dialect, { database: database(), adminKey });
      try {
        const key = (await a.api.post('/api/v1/auth/keys', { agent_id: 'remote-1', role: 'agent' })).body.data.key as string;
        const conn = await connect(b.url, CHANNEL, { authorization: `Bearer ${key}` });
        try {
          conn.write({ credit: 5 });
          // The push loop is waiting on B once a request frame sent after the credit is answered.
          await conn.request('heartbeat', {});
          for (let i = 0; i < 3; i++) {
            const sent = await a.api.post(`${M}/send`, { destination: 'remote-1', event_name: 'far', payload: { i } });
            // Within frame()'s 10 s: woken, not found by the push loop's 30 s wait running out.
            await conn.frame((f) => f.message?.message_id === sent.body.data.message_id);
          }
        } finally {
          conn.socket.close();
        }
      } finally {
        await b.close();
        await a.close();
      }
    },
    30_000,
  );
});
