import { Webhook } from 'standardwebhooks';
import { afterEach, expect, it } from 'vitest';
import { Switchboard, verifyWebhook } from '../../src/client/index.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startReceiver, useReceivers } from './receiver.js';

const HOUR = 3_600_000;
// A short timeout for the silent receiver, long enough that a loaded machine does not time out the others.
const ENV = { SWITCHBOARD_WEBHOOK_POLL_MS: '20', SWITCHBOARD_WEBHOOK_TIMEOUT_MS: '2000' };

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  response_body: string | null;
  next_attempt_at: string | null;
}

/** Webhook calls on one server, as the admin. */
function webhooksOf(server: TestServer) {
  const api = () => server.api;
  return {
    async create(body: Record<string, unknown>) {
      const res = await api().post('/api/v1/webhooks', body);
      expect(res.status, res.text).toBe(201);
      return res.body.data as { id: string; secret: string; enabled: boolean };
    },
    async deliveries(id: string): Promise<Delivery[]> {
      const res = await api().get(`/api/v1/webhooks/${id}/deliveries?limit=500`);
      expect(res.status, res.text).toBe(200);
      return res.body.data;
    },
    /** The webhook's only delivery, once `ready` holds for it. */
    async delivery(id: string, ready: (d: Delivery) => boolean): Promise<Delivery> {
      return waitFor(async () => {
        const [only] = await this.deliveries(id);
        return only && ready(only) ? only : undefined;
      }, 10_000);
    },
    async task(title: string) {
      const res = await api().post('/core/api/v1/tasks', { title });
      expect(res.status, res.text).toBe(201);
      return res.body.data as { id: string };
    },
  };
}

describeEachDialect('outbound webhooks', (dialect) => {
  // Backoff and the 24 h rules run on this clock; it starts now, so signatures stay fresh.
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock, env: ENV });
  const hooks = webhooksOf(server);
  const receiver = useReceivers();

  afterEach(async () => {
    // Every test's webhooks go, so later events do not reach its closed receivers.
    for (const webhook of (await server.api.get('/api/v1/webhooks?limit=500')).body.data)
      await server.api.delete(`/api/v1/webhooks/${webhook.id}`);
  });

  it('creates, lists, gets, updates and deletes webhooks; the secret is shown only on create', async () => {
    const created = await hooks.create({ url: 'https://example.com/hook', types: ['run.*', 'task.>'], description: 'ops' });
    expect(created).toMatchObject({
      url: 'https://example.com/hook',
      types: ['run.*', 'task.>'],
      description: 'ops',
      enabled: true,
      failing_since: null,
    });
    expect(created.id).toMatch(/^whk_/);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);

    const got = await server.api.get(`/api/v1/webhooks/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data.secret).toBeUndefined();
    const listed = await server.api.get('/api/v1/webhooks?limit=1');
    expect(listed.body.meta).toMatchObject({ total: 1, limit: 1, offset: 0 });
    expect(listed.body.data[0].secret).toBeUndefined();

    const patched = await server.api.patch(`/api/v1/webhooks/${created.id}`, {
      url: 'http://example.com/other',
      types: ['task.created'],
      description: null,
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ url: 'http://example.com/other', types: ['task.created'], description: null, enabled: true });

    // Disabled by hand: told in the log like an automatic disable, with the admin as actor.
    const paused = await server.api.patch(`/api/v1/webhooks/${created.id}`, { enabled: false });
    expect(paused.body.data).toMatchObject({ enabled: false, disabled_reason: 'disabled by admin' });
    const told = (await server.api.get(`/api/v1/events?type=webhook.disabled&subject=${created.id}`)).body.data;
    expect(told).toMatchObject([{ actor: 'admin', data: { webhook: { id: created.id, enabled: false } } }]);

    const removed = await server.api.delete(`/api/v1/webhooks/${created.id}`);
    expect(removed.body.data).toEqual({ id: created.id, deleted: true });
    expect((await server.api.get(`/api/v1/webhooks/${created.id}`)).status).toBe(404);
    expect((await server.api.delete(`/api/v1/webhooks/${created.id}`)).status).toBe(404);
    expect((await server.api.patch(`/api/v1/webhooks/${created.id}`, { description: 'x' })).status).toBe(404);
    expect((await server.api.get(`/api/v1/webhooks/${created.id}/deliveries`)).status).toBe(404);
    expect((await server.api.post(`/api/v1/webhooks/${created.id}/test`)).status).toBe(404);
  });

  it('refuses bad urls, types and fields with 400 in the envelope', async () => {
    const bad = [
      { url: 'ftp://example.com/x', types: ['run.*'] },
      { url: 'not a url', types: ['run.*'] },
      { url: `https://example.com/${'a'.repeat(2100)}`, types: ['run.*'] },
      { url: 'https://example.com', types: [] },
      { url: 'https://example.com', types: ['run.>.x'] },
      { url: 'https://example.com', types: ['nothing.like.this'] },
      { url: 'https://example.com', types: ['run.*'], secret: 'mine' },
      { url: 'https://example.com', types: ['run.*'], description: 'x'.repeat(1001) },
      { types: ['run.*'] },
    ];
    for (const body of bad) {
      const res = await server.api.post('/api/v1/webhooks', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    const { id } = await hooks.create({ url: 'https://example.com', types: ['run.*'] });
    expect((await server.api.patch(`/api/v1/webhooks/${id}`, { types: ['a..b'] })).status).toBe(400);
    expect((await server.api.patch(`/api/v1/webhooks/${id}`, { url: 'mailto:x@example.com' })).status).toBe(400);
    expect((await server.api.get(`/api/v1/webhooks/${id}/deliveries?status=lost`)).status).toBe(400);
  });

  it('is for admins only: an agent key gets 403 on every route', async () => {
    const { id } = await hooks.create({ url: 'https://example.com', types: ['run.*'] });
    const agent = await server.agent('webhook-snoop');
    const calls = [
      agent.post('/api/v1/webhooks', { url: 'https://example.com', types: ['run.*'] }),
      agent.post('/api/v1/webhooks', { nonsense: true }),
      agent.get('/api/v1/webhooks'),
      agent.get(`/api/v1/webhooks/${id}`),
      agent.patch(`/api/v1/webhooks/${id}`, { description: 'mine' }),
      agent.delete(`/api/v1/webhooks/${id}`),
      agent.get(`/api/v1/webhooks/${id}/deliveries`),
      agent.post(`/api/v1/webhooks/${id}/test`),
      agent.post(`/api/v1/webhooks/${id}/deliveries/whd_x/retry`),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status, res.text).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    expect((await server.api.get('/api/v1/webhooks', { key: null })).status).toBe(401);
  });

  it('delivers matching events signed the Standard Webhooks way, and not the others', async () => {
    const created = await receiver();
    const updated = await receiver();
    const onCreated = await hooks.create({ url: created.url, types: ['task.created'] });
    const onUpdated = await hooks.create({ url: updated.url, types: ['task.updated'] });
    const task = await hooks.task('hooked');
    await server.api.patch(`/core/api/v1/tasks/${task.id}`, { status: 'done' });

    const [request] = await created.until(1);
    const events = (await server.api.get(`/api/v1/events?subject=${task.id}`)).body.data;
    expect(events.map((e: { type: string }) => e.type)).toEqual(['task.created', 'task.updated']);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['webhook-id']).toBe(events[0].id);
    expect(Number(request!.headers['webhook-timestamp'])).toBe(Math.floor(clock.now() / 1000));
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(JSON.parse(request!.body)).toEqual(events[0]);
    // The official verifier, and the SDK's helper over it.
    expect(new Webhook(onCreated.secret).verify(request!.body, request!.headers as Record<string, string>)).toEqual(events[0]);
    expect(verifyWebhook(onCreated.secret, request!.headers, request!.body)).toEqual(events[0]);
    expect(verifyWebhook(onCreated.secret, new Headers(request!.headers as Record<string, string>), Buffer.from(request!.body))).toEqual(
      events[0],
    );
    expect(() => verifyWebhook(onUpdated.secret, request!.headers, request!.body)).toThrow(/signature/i);
    expect(() => verifyWebhook(onCreated.secret, request!.headers, request!.body.replace('hooked', 'forged'))).toThrow(/signature/i);

    // The log is matched in order: by the time task.updated arrives, task.created was passed over.
    const [other] = await updated.until(1);
    expect(JSON.parse(other!.body)).toEqual(events[1]);
    expect(updated.received).toHaveLength(1);
    // The receiver answers before the delivery's record is written: wait for the record.
    const done = await hooks.delivery(onCreated.id, (d) => d.status === 'delivered');
    expect(done).toMatchObject({
      event_id: events[0].id,
      event_type: 'task.created',
      attempts: 1,
      last_status_code: 204,
      error: null,
      next_attempt_at: null,
    });
    expect(done.latency_ms).toBeGreaterThanOrEqual(0);
  });

  it('retries a receiver answering 503 with the same webhook-id, and ends delivered after 2 attempts', async () => {
    const flaky = await receiver((index) => (index === 0 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }));
    const { id } = await hooks.create({ url: flaky.url, types: ['task.created'] });
    await hooks.task('flaky');
    const failed = await hooks.delivery(id, (d) => d.attempts === 1 && d.latency_ms !== null);
    expect(failed).toMatchObject({ status: 'pending', last_status_code: 503, error: 'HTTP 503', response_body: 'busy' });
    // The first retry comes within 30 s, on the server's clock.
    const retryAt = Date.parse(failed.next_attempt_at!);
    expect(retryAt - clock.now()).toBeGreaterThan(0);
    expect(retryAt - clock.now()).toBeLessThanOrEqual(30_000);
    clock.set(retryAt);
    const delivered = await hooks.delivery(id, (d) => d.status === 'delivered');
    expect(delivered).toMatchObject({ attempts: 2, last_status_code: 200, response_body: 'ok', error: null });
    const [first, second] = await flaky.until(2);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.headers['webhook-id']).toBe(delivered.event_id);
    expect((await server.api.get(`/api/v1/webhooks/${id}`)).body.data.failing_since).toBeNull();
    // Each attempt is kept, not only the last: the 503 that was retried into a 200 leaves its trace.
    const attempts = await server.api.get(`/api/v1/webhooks/${id}/deliveries/${delivered.id}/attempts`);
    expect(attempts.status, attempts.text).toBe(200);
    expect(attempts.body.meta.total).toBe(2);
    expect(attempts.body.data).toMatchObject([
      { attempt: 1, status_code: 503, error: 'HTTP 503' },
      { attempt: 2, status_code: 200, error: null },
    ]);
    for (const attempt of attempts.body.data) expect(attempt.latency_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(attempts.body.data[1].started_at)).toBeGreaterThanOrEqual(Date.parse(attempts.body.data[0].started_at));
    expect((await server.api.get(`/api/v1/webhooks/${id}/deliveries/whd_nope/attempts`)).status).toBe(404);
    // Deleting the webhook takes its deliveries' attempts with it.
    expect((await server.api.delete(`/api/v1/webhooks/${id}`)).status).toBe(200);
    expect((await server.api.get(`/api/v1/webhooks/${id}/deliveries/${delivered.id}/attempts`)).status).toBe(404);
  });

  it('does not follow redirects, and keeps at most 4 KiB of an answer', async () => {
    const target = await receiver();
    const redirecting = await receiver(() => ({ status: 302, headers: { location: target.url } }));
    const chatty = await receiver(() => ({ status: 200, body: 'x'.repeat(10_000) }));
    const redirected = await hooks.create({ url: redirecting.url, types: ['task.created'] });
    const verbose = await hooks.create({ url: chatty.url, types: ['task.created'] });
    await hooks.task('redirect me');
    expect(await hooks.delivery(redirected.id, (d) => d.attempts === 1 && d.latency_ms !== null)).toMatchObject({
      status: 'pending',
      last_status_code: 302,
      error: `redirect to ${target.url} not followed`,
    });
    expect(target.received).toHaveLength(0);
    const kept = await hooks.delivery(verbose.id, (d) => d.status === 'delivered');
    expect(kept.response_body).toBe('x'.repeat(4096));
  });

  it('gives up on a receiver that does not answer in time, without slowing the request that caused the event', async () => {
    const silent = await receiver(() => 'hang');
    const { id } = await hooks.create({ url: silent.url, types: ['task.created'] });
    await hooks.task('first');
    await silent.until(1);
    // The receiver holds the first delivery; a request that causes another event is answered meanwhile.
    await hooks.task('second');
    // Newest first: the last is the first task's, still in its first attempt.
    expect((await hooks.deliveries(id)).at(-1)).toMatchObject({ attempts: 1, latency_ms: null });
    const timedOut = await waitFor(async () => (await hooks.deliveries(id)).find((d) => d.latency_ms !== null), 10_000);
    expect(timedOut).toMatchObject({ status: 'pending', last_status_code: null, error: 'no answer within 2000 ms' });
  });

  it('sends a test event to one webhook, and retries a delivery at once on request', async () => {
    let healthy = false;
    const target = await receiver(() => (healthy ? { status: 200 } : { status: 500 }));
    const bystander = await receiver();
    const hook = await hooks.create({ url: target.url, types: ['run.completed'] });
    await hooks.create({ url: bystander.url, types: ['run.completed'] });
    const queued = await server.api.post(`/api/v1/webhooks/${hook.id}/test`);
    expect(queued.status, queued.text).toBe(202);
    expect(queued.body.data).toMatchObject({ event_type: 'webhook.test', status: 'pending', attempts: 0 });
    const [request] = await target.until(1);
    const event = verifyWebhook(hook.secret, request!.headers, request!.body);
    expect(event).toMatchObject({
      id: queued.body.data.event_id,
      type: 'webhook.test',
      subject: hook.id,
      actor: 'admin',
      data: { webhook_id: hook.id },
    });

    const failed = await hooks.delivery(hook.id, (d) => d.attempts === 1 && d.last_status_code === 500);
    healthy = true;
    const retried = await server.api.post(`/api/v1/webhooks/${hook.id}/deliveries/${failed.id}/retry`);
    expect(retried.status, retried.text).toBe(202);
    // No clock movement: the retry is due at once.
    expect(await hooks.delivery(hook.id, (d) => d.status === 'delivered')).toMatchObject({ attempts: 2, last_status_code: 200 });
    expect((await server.api.post(`/api/v1/webhooks/${hook.id}/deliveries/${failed.id}/retry`)).status).toBe(409);
    expect((await server.api.post(`/api/v1/webhooks/${hook.id}/deliveries/whd_missing/retry`)).status).toBe(404);
    expect(bystander.received).toHaveLength(0);
  });

  it('delivers each event once from two nodes on the same database', async () => {
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey, clock, env: ENV });
    try {
      const target = await receiver();
      const { id } = await hooks.create({ url: target.url, types: ['task.created'] });
      const other = webhooksOf(second);
      const count = 20;
      await Promise.all(Array.from({ length: count }, (_, i) => (i % 2 === 0 ? hooks : other).task(`twice ${i}`)));
      await waitFor(async () => {
        const all = await hooks.deliveries(id);
        return all.length === count && all.every((d) => d.status === 'delivered');
      }, 15_000);
      const ids = target.received.map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(count);
      expect(new Set(ids).size).toBe(count);
    } finally {
      await second.close();
    }
  });
  it('is managed through the SDK (client.webhooks.*), whose verifyWebhook accepts what arrives', async () => {
    const client = new Switchboard({ url: server.url, apiKey: server.adminKey });
    const target = await receiver((index) => (index === 0 ? { status: 500 } : { status: 204 }));
    const created = await client.webhooks.create({ body: { url: target.url, types: ['task.deleted'], description: 'sdk' } });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await client.webhooks.list()).map((w) => w.id)).toContain(created.id);
    expect(await client.webhooks.get({ path: { id: created.id } })).toMatchObject({ description: 'sdk', enabled: true });
    expect(await client.webhooks.update({ path: { id: created.id }, body: { types: ['task.*'] } })).toMatchObject({ types: ['task.*'] });
    const queued = await client.webhooks.test({ path: { id: created.id } });
    const [request] = await target.until(1);
    expect(verifyWebhook(created.secret, request!.headers, request!.body)).toMatchObject({ id: queued.event_id, type: 'webhook.test' });
    const failed = await waitFor(
      async () => (await client.webhooks.deliveries({ path: { id: created.id } })).find((d) => d.latency_ms !== null),
      10_000,
    );
    expect(failed).toMatchObject({ status: 'pending', last_status_code: 500 });
    await client.webhooks.retry({ path: { id: created.id, delivery_id: failed.id } });
    await waitFor(
      async () => (await client.webhooks.deliveries({ path: { id: created.id }, query: { status: 'delivered' } })).length === 1,
      10_000,
    );
    expect(await client.webhooks.delete({ path: { id: created.id } })).toEqual({ id: created.id, deleted: true });
  });

  // Last: it moves the clock a day on, past what signatures' timestamps may be off by.
  it('fails a delivery to a dead receiver after 24 h of backoff and disables the webhook with a webhook.disabled event', async () => {
    const dead = await receiver(() => ({ status: 500 }));
    const { id } = await hooks.create({ url: dead.url, types: ['task.created'] });
    await hooks.task('doomed');
    const start = clock.now();
    let attempts = 0;
    let previousGap = 0;
    for (;;) {
      const current = await hooks.delivery(id, (d) => d.attempts > attempts && d.latency_ms !== null);
      attempts = current.attempts;
      if (current.status !== 'pending') {
        expect(current.status).toBe('failed');
        break;
      }
      // Each wait doubles (from 10 s), at most an hour.
      const gap = Date.parse(current.next_attempt_at!) - clock.now();
      expect(gap).toBeGreaterThanOrEqual(Math.min(previousGap, start + 24 * HOUR - clock.now()));
      expect(gap).toBeLessThanOrEqual(HOUR);
      previousGap = gap;
      clock.set(Date.parse(current.next_attempt_at!));
    }
    expect(clock.now() - start).toBe(24 * HOUR);
    expect(attempts).toBeGreaterThan(20);
    expect(dead.received).toHaveLength(attempts);

    const webhook = (await server.api.get(`/api/v1/webhooks/${id}`)).body.data;
    expect(webhook).toMatchObject({ enabled: false, failing_since: new Date(start).toISOString() });
    expect(webhook.disabled_reason).toMatch(/24 h/);
    const disabled = (await server.api.get(`/api/v1/events?type=webhook.disabled&subject=${id}`)).body.data;
    expect(disabled).toHaveLength(1);
    expect(disabled[0]).toMatchObject({ actor: 'system', data: { webhook: { id, enabled: false } } });

    // Disabled: no tests, no retries, until it is re-enabled.
    const [failed] = await hooks.deliveries(id);
    expect((await server.api.post(`/api/v1/webhooks/${id}/test`)).status).toBe(409);
    expect((await server.api.post(`/api/v1/webhooks/${id}/deliveries/${failed!.id}/retry`)).status).toBe(409);
    const enabled = await server.api.patch(`/api/v1/webhooks/${id}`, { enabled: true });
    expect(enabled.body.data).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });
  });

  it('deletes settled deliveries once they are older than the event retention (30 days)', async () => {
    const target = await receiver();
    const { id } = await hooks.create({ url: target.url, types: ['task.created'] });
    await server.api.post(`/api/v1/webhooks/${id}/test`);
    await hooks.delivery(id, (d) => d.status === 'delivered');
    clock.advance(31 * 24 * HOUR);
    const recent = (await server.api.post(`/api/v1/webhooks/${id}/test`)).body.data;
    await waitFor(async () => (await hooks.deliveries(id)).every((d) => d.status === 'delivered'));
    // The retention worker's pass (at start, then every 10 minutes) deletes them.
    expect(await server.app.retention.pass()).not.toBeNull();
    expect((await hooks.deliveries(id)).map((d) => d.id)).toEqual([recent.id]);
  });
});

// Issue 34 item 15: the guard was off by default and missed embedded IPv4 forms, 198.18/15,
// multicast and broadcast. Now on by default; internal receivers need the allow list (the test
// helper names 127.0.0.1 there, which every other suite's receivers use).
describeEachDialect('outbound webhooks: the receiver guard, on by default', (dialect) => {
  const server = useServer(dialect, { env: { ...ENV, SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS: '' } });
  const hooks = webhooksOf(server);

  it('refuses internal IP literals at create and update with 400, and internal names when a delivery resolves them, without connecting', async () => {
    const urls = [
      'http://127.0.0.1:9/x',
      'http://[::1]/x',
      'http://10.1.2.3/',
      'https://192.168.0.10/',
      'http://169.254.169.254/latest',
      'http://[::ffff:127.0.0.1]/',
      'http://[::127.0.0.1]/',
      'http://[64:ff9b::a9fe:a9fe]/latest',
      'http://[2002:7f00:1::]/',
      'http://198.18.0.1/',
      'http://224.0.0.1/',
      'http://255.255.255.255/',
      'http://[ff02::1]/',
    ];
    for (const url of urls) {
      const res = await server.api.post('/api/v1/webhooks', { url, types: ['task.created'] });
      expect(res.status, url).toBe(400);
      expect(res.body.error.details[0]).toMatchObject({ field: 'url', message: expect.stringMatching(/ is in .*|carries /) });
      expect(res.body.error.message).toMatch(/SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS/);
    }
    expect((await server.api.get('/api/v1/webhooks')).body.data).toEqual([]);
    const receiver = await startReceiver();
    try {
      const { id } = await hooks.create({ url: receiver.url.replace('127.0.0.1', 'localhost'), types: ['task.created'] });
      expect((await server.api.patch(`/api/v1/webhooks/${id}`, { url: 'http://172.16.0.1/' })).status).toBe(400);
      expect((await server.api.patch(`/api/v1/webhooks/${id}`, { url: 'http://[::ffff:ac10:1]/' })).status).toBe(400);
      await hooks.task('internal');
      const refused = await hooks.delivery(id, (d) => d.latency_ms !== null);
      expect(refused).toMatchObject({ last_status_code: null, response_body: null });
      expect(refused.error).toMatch(
        /^localhost resolved to (127\.0\.0\.1 is in 127\.0\.0\.0\/8 \(loopback\)|::1 is in ::1\/128 \(loopback\)): not a public address, and SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS does not name it$/,
      );
      expect(receiver.received).toHaveLength(0);
      await server.api.delete(`/api/v1/webhooks/${id}`);
    } finally {
      await receiver.close();
    }
  });
});

describeEachDialect('outbound webhooks: internal receivers on the allow list', (dialect) => {
  // The guard named explicitly: before the allow list, turning it on refused every internal receiver.
  const server = useServer(dialect, {
    env: { ...ENV, SWITCHBOARD_WEBHOOK_DENY_PRIVATE: 'true', SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS: '192.0.2.1,127.0.0.0/8' },
  });
  const hooks = webhooksOf(server);

  it('delivers to an address in an allowed range', async () => {
    const receiver = await startReceiver();
    try {
      const { id } = await hooks.create({ url: receiver.url, types: ['task.created'] });
      await hooks.task('allowed');
      expect(await hooks.delivery(id, (d) => d.status !== 'pending')).toMatchObject({
        status: 'delivered',
        last_status_code: 204,
        error: null,
      });
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
