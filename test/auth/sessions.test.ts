import { expect, it } from 'vitest';
import WebSocket from 'ws';
import { Api } from '../helpers/api.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { signIn, signInAttempt } from '../helpers/session.js';
import { waitFor, within } from '../helpers/wait.js';

const U = '/api/v1/auth/users';
const CURRENT = '/api/v1/auth/sessions/current';
const PASSWORD = 'correct horse battery';
const HOUR = 3_600_000;

/**
 * The console's sessions (design §3): sign-in with a password or an API key, the cookie's
 * flags, CSRF on state changes, sliding expiry, sign-out, throttled failures, and the cookie
 * wherever a key is accepted (Bearer wins).
 */
describeEachDialect('sessions', (dialect) => {
  const clock = new FakeClock(Date.now());
  // Behind a proxy on this host: X-Forwarded-For names the client (a different address per test).
  const server = useServer(dialect, {
    clock,
    env: {
      SWITCHBOARD_TRUSTED_PROXIES: '127.0.0.1',
      SWITCHBOARD_PUBLIC_URL: 'https://switchboard.example',
      SWITCHBOARD_AUDIT_DENIAL_WINDOW_MS: '200',
    },
  });
  let users = 0;
  let addresses = 0;

  async function user(role = 'operator'): Promise<{ id: string; username: string }> {
    const res = await server.api.post(U, { username: `person-${dialect}-${++users}`, role, password: PASSWORD });
    expect(res.status, res.text).toBe(201);
    return res.body.data;
  }
  const from = () => ({ 'x-forwarded-for': `203.0.113.${++addresses}` });

  it('signs in with a password: an HttpOnly, SameSite=Strict, Secure cookie, the principal and a CSRF token', async () => {
    const person = await user();
    const session = await signIn(server.url, { username: person.username, password: PASSWORD }, from());
    const setCookie = session.signedIn.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^switchboard_session=sbs_[A-Za-z0-9_-]+; HttpOnly; SameSite=Strict; Path=\/; Secure$/);
    const data = session.signedIn.body.data;
    expect(data.principal).toMatchObject({
      kind: 'user',
      id: person.id,
      username: person.username,
      role: 'operator',
      key_id: null,
      actor: `user:${person.username}`,
    });
    expect(data.principal.session.id).toMatch(/^sess_/);
    expect(Date.parse(data.expires_at) - clock.now()).toBe(12 * HOUR);
    expect(data.csrf_token).toMatch(/^[0-9a-f]{64}$/);

    const me = await session.request('GET', '/api/v1/auth/whoami');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ kind: 'user', id: person.id, session: { id: data.principal.session.id } });
    const current = await session.request('GET', CURRENT);
    expect(current.body.data).toMatchObject({ csrf_token: data.csrf_token, principal: { id: person.id } });
    // With a key instead, there is no session.
    expect((await server.api.get(CURRENT)).status).toBe(404);
    expect((await server.api.get('/api/v1/auth/whoami')).body.data.session).toBeNull();
  });

  it('needs the CSRF token on requests that change state (403 without, or with a wrong one)', async () => {
    const person = await user();
    const session = await signIn(server.url, { username: person.username, password: PASSWORD }, from());
    const body = { user_id: person.id, role: 'viewer' };
    const without = await session.request('POST', '/api/v1/auth/keys', { body, csrf: false });
    expect(without.status).toBe(403);
    expect(without.body.error.message).toContain('X-CSRF-Token');
    const wrong = await session.request('POST', '/api/v1/auth/keys', { body, csrf: false, headers: { 'x-csrf-token': '0'.repeat(64) } });
    expect(wrong.status).toBe(403);
    expect((await session.request('DELETE', CURRENT, { csrf: false })).status).toBe(403);
    expect((await session.request('POST', '/api/v1/auth/keys', { body })).status).toBe(201);
    // Reads need none.
    expect((await session.request('GET', '/api/v1/coordination/runs', { csrf: false })).status).toBe(200);
  });

  it('slides the expiry with use and refuses a session unused for the TTL', async () => {
    const person = await user();
    const session = await signIn(server.url, { username: person.username, password: PASSWORD }, from());
    for (let i = 0; i < 3; i++) {
      clock.advance(10 * HOUR);
      const me = await session.request('GET', '/api/v1/auth/whoami');
      expect(me.status).toBe(200);
      expect(Date.parse(me.body.data.session.expires_at)).toBe(clock.now() + 12 * HOUR);
    }
    // Another node reads the extended expiry from the database.
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey, clock });
    try {
      const there = await new Api(second.url, null).get('/api/v1/auth/whoami', { headers: { cookie: session.cookie } });
      expect(there.status).toBe(200);
    } finally {
      await second.close();
    }
    clock.advance(12 * HOUR);
    const expired = await session.request('GET', '/api/v1/auth/whoami');
    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toMatch(/expired/);
  });

  it('signs out: the session ends and the cookie is cleared', async () => {
    const person = await user();
    const session = await signIn(server.url, { username: person.username, password: PASSWORD }, from());
    const out = await session.request('DELETE', CURRENT);
    expect(out.status, out.text).toBe(200);
    expect(out.body.data).toEqual({ id: session.signedIn.body.data.principal.session.id, deleted: true });
    expect(out.headers.get('set-cookie')).toBe('switchboard_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0; Secure');
    expect((await session.request('GET', '/api/v1/auth/whoami')).status).toBe(401);
    expect((await server.api.delete(CURRENT)).status).toBe(404);
  });

  it('throttles wrong passwords per username and address: the sixth try gets 429 with Retry-After', async () => {
    const person = await user();
    const address = from();
    const unknown = await signInAttempt(server.url, { username: 'nobody-at-all', password: PASSWORD }, from());
    for (let i = 0; i < 5; i++) {
      const res = await signInAttempt(server.url, { username: person.username, password: 'wrong password!' }, address);
      expect(res.status).toBe(401);
      // No username oracle: an unknown user gets the same answer.
      expect(res.body.error.message).toBe(unknown.body.error.message);
    }
    const throttled = await signInAttempt(server.url, { username: person.username, password: PASSWORD }, address);
    expect(throttled.status).toBe(429);
    expect(throttled.body.error.code).toBe('rate_limited');
    expect(Number(throttled.headers.get('retry-after'))).toBe(15 * 60);
    // Another address, or another username from this one, is not held back.
    await signIn(server.url, { username: person.username, password: PASSWORD }, from());
    expect((await signInAttempt(server.url, { username: 'someone-else', password: PASSWORD }, address)).status).toBe(401);
    clock.advance(15 * 60_000 + 1);
    await signIn(server.url, { username: person.username, password: PASSWORD }, address);
    // The held-back try is in the audit log, as a denial from that address.
    const held = await waitFor(
      async () =>
        (await server.api.get('/api/v1/audit?action=session.create&outcome=denied')).body.data.find(
          (e: { status: number }) => e.status === 429,
        ),
      10_000,
    );
    expect(held).toMatchObject({
      actor: { kind: 'anonymous' },
      ip: address['x-forwarded-for'],
      resource: { type: 'path', id: '/api/v1/auth/sessions' },
      count: 1,
    });
  });

  it('exchanges an API key for a session, which ends with the key; Bearer wins over the cookie', async () => {
    const created = await server.api.post('/api/v1/auth/keys', { agent_id: 'session-agent' });
    const session = await signIn(server.url, { api_key: created.body.data.key }, from());
    expect(session.signedIn.body.data.principal).toMatchObject({ kind: 'agent', id: 'session-agent', key_id: created.body.data.id });
    const both = await new Api(server.url, server.adminKey).get('/api/v1/auth/whoami', { headers: { cookie: session.cookie } });
    expect(both.body.data).toMatchObject({ kind: 'admin', session: null });
    expect((await signInAttempt(server.url, { api_key: 'sk_unknown' }, from())).status).toBe(401);
    expect((await signInAttempt(server.url, { api_key: created.body.data.key, password: PASSWORD }, from())).status).toBe(400);
    expect((await signInAttempt(server.url, { username: 'only-a-name' }, from())).status).toBe(400);

    await server.api.delete(`/api/v1/auth/keys/${created.body.data.id}`);
    expect((await session.request('GET', '/api/v1/auth/whoami')).status).toBe(401);
  });

  it('the cookie opens the event stream and the agent channel, which end when the session does', async () => {
    const person = await user();
    const session = await signIn(server.url, { username: person.username, password: PASSWORD }, from());
    const controller = new AbortController();
    const stream = await fetch(`${server.url}/api/v1/events/stream`, { headers: { cookie: session.cookie }, signal: controller.signal });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/);
    const streamEnded = stream.body!.pipeTo(new WritableStream()).catch(() => undefined);

    const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/api/v1/messaging/channel?agent_id=cookie-agent`, {
      headers: { cookie: session.cookie },
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
    await new Promise<void>((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    try {
      expect((await session.request('DELETE', CURRENT)).status).toBe(200);
      expect(await within(closed, 5000, 'the channel to close')).toEqual({ code: 1008, reason: 'Session ended' });
      await within(streamEnded, 5000, 'the event stream to end');
    } finally {
      socket.terminate();
      controller.abort();
    }
  });
});
