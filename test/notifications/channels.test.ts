import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { Webhook } from 'standardwebhooks';
import { Switchboard, verifyWebhook } from '../../src/client/index.js';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { slackBody } from '../../src/notifications/render.js';
import { receiveOne } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { useReceivers } from '../webhooks/receiver.js';
import { validSlackMessage } from './slack-blocks.js';

const C = '/api/v1/notifications/channels';

interface Mail {
  from: string;
  to: string[];
  raw: string;
}

/** An SMTP server on 127.0.0.1 that keeps every message; `refuse(n)` answers 451 to every RCPT of the n-th MAIL (0-based). */
async function startSmtp(refuse: (index: number) => boolean = () => false) {
  const mails: Mail[] = [];
  let started = 0;
  const mailIndex = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    // Plain SMTP on loopback: no STARTTLS to negotiate with a self-signed certificate.
    disabledCommands: ['STARTTLS'],
    logger: false,
    onMailFrom(_address, session, callback) {
      mailIndex.set(session.id, started++);
      callback();
    },
    onRcptTo(_address, session, callback) {
      if (refuse(mailIndex.get(session.id)!)) {
        const err = Object.assign(new Error('mailbox busy, try later'), { responseCode: 451 });
        return callback(err);
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    /** How many MAIL commands it has seen. */
    started: () => started,
    until: (count: number) => waitFor(() => (mails.length >= count ? mails.slice(0, count) : undefined), 10_000),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Headers and parts of a raw message, with quoted-printable soft breaks and escapes undone. */
function decoded(raw: string): string {
  return raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

describeEachDialect('notification channels', (dialect) => {
  // Backoff runs on this clock; it starts now, so signatures stay fresh.
  const clock = new FakeClock(Date.now());
  const env: Record<string, string> = {
    SWITCHBOARD_WEBHOOK_POLL_MS: '20',
    SWITCHBOARD_WEBHOOK_TIMEOUT_MS: '5000',
    SWITCHBOARD_SMTP_FROM: 'Alerts <alerts@switchboard.test>',
  };
  let smtpRefusals = new Set<number>();
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  beforeAll(async () => {
    smtp = await startSmtp((index) => smtpRefusals.has(index));
    env.SWITCHBOARD_SMTP_URL = smtp.url;
  });
  afterAll(() => smtp.close());
  const server = useServer(dialect, { clock, env });
  const receiver = useReceivers();

  afterEach(async () => {
    for (const channel of (await server.api.get(`${C}?limit=500`)).body.data) await server.api.delete(`${C}/${channel.id}`);
  });

  async function create(body: Record<string, unknown>) {
    const res = await server.api.post(C, body);
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; type: string; name: string; config: Record<string, unknown>; secret?: string };
  }

  async function test(id: string) {
    const res = await server.api.post(`${C}/${id}/test`);
    expect(res.status, res.text).toBe(202);
    return res.body.data as { channel_id: string; notification_id: string; delivery_id: string | null; message_id: string | null };
  }

  /** The channel's delivery, once `ready` holds for it (the delivery log of event webhooks). */
  function delivery(server: TestServer, channelId: string, deliveryId: string, ready: (d: any) => boolean) {
    return waitFor(async () => {
      const res = await server.api.get(`/api/v1/webhooks/${channelId}/deliveries`);
      expect(res.status, res.text).toBe(200);
      const found = res.body.data.find((d: { id: string }) => d.id === deliveryId);
      return found && ready(found) ? found : undefined;
    }, 10_000);
  }

  it('creates, lists, gets, updates and deletes channels; audited; secrets are never returned after creation', async () => {
    const hook = await create({ type: 'webhook', name: 'ops hook', config: { url: 'https://example.com/notify' } });
    expect(hook).toMatchObject({ type: 'webhook', name: 'ops hook', config: { url: 'https://example.com/notify' }, created_by: 'admin' });
    expect(hook.id).toMatch(/^ntc_/);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const slack = await create({
      type: 'slack',
      name: 'ops slack',
      config: { webhook_url: 'https://hooks.slack.com/services/T0/B0/very-secret-token' },
    });
    // The incoming-webhook URL is the credential: only its origin is ever shown, and no signing secret.
    expect(slack.config).toEqual({ webhook_url: 'https://hooks.slack.com/…' });
    expect(slack).not.toHaveProperty('secret');
    const mail = await create({ type: 'email', name: 'on call', config: { to: ['oncall@example.com', 'lead@example.com'] } });
    const agent = await create({ type: 'agent', name: 'triage', config: { agent_id: 'triage-bot' } });
    expect(agent.config).toEqual({ agent_id: 'triage-bot' });

    const listed = await server.api.get(C);
    expect(listed.status).toBe(200);
    expect(listed.body.meta.total).toBe(4);
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([hook.id, slack.id, mail.id, agent.id]);
    const texts = [listed.text, (await server.api.get(`${C}/${hook.id}`)).text, (await server.api.get(`${C}/${slack.id}`)).text];
    for (const text of texts) {
      expect(text).not.toContain(hook.secret);
      expect(text).not.toContain('very-secret-token');
      expect(text).not.toContain('whsec_');
    }
    // Their delivery targets are not event webhooks.
    expect((await server.api.get('/api/v1/webhooks')).body.data).toEqual([]);
    expect((await server.api.get(`/api/v1/webhooks/${hook.id}`)).status).toBe(404);
    expect((await server.api.delete(`/api/v1/webhooks/${hook.id}`)).status).toBe(404);
    expect((await server.api.post(`/api/v1/webhooks/${hook.id}/test`)).status).toBe(404);

    const renamed = await server.api.patch(`${C}/${hook.id}`, { name: 'renamed', config: { url: 'https://example.org/other' } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: 'renamed', config: { url: 'https://example.org/other' }, type: 'webhook' });
    expect(renamed.text).not.toContain('whsec_');
    expect((await server.api.get(`${C}/${hook.id}`)).body.data.name).toBe('renamed');

    expect((await server.api.delete(`${C}/${mail.id}`)).status).toBe(200);
    expect((await server.api.get(`${C}/${mail.id}`)).status).toBe(404);
    expect((await server.api.delete(`${C}/${mail.id}`)).status).toBe(404);
    expect((await server.api.get(`/api/v1/webhooks/${mail.id}/deliveries`)).status).toBe(404);

    const audit = await server.api.get(`/api/v1/audit?resource_type=notification_channel&limit=50`);
    expect(audit.status, audit.text).toBe(200);
    const actions = audit.body.data.map((e: { action: string; resource: { id: string } }) => `${e.action} ${e.resource.id}`);
    expect(actions).toEqual(
      expect.arrayContaining([
        `notification_channel.create ${hook.id}`,
        `notification_channel.update ${hook.id}`,
        `notification_channel.delete ${mail.id}`,
      ]),
    );
  });

  it('refuses bad types, configs, URLs and fields with 400', async () => {
    const bad = [
      { type: 'pager', name: 'x', config: { url: 'https://example.com' } },
      { type: 'webhook', name: 'x', config: { webhook_url: 'https://example.com' } },
      { type: 'webhook', name: 'x', config: { url: 'ftp://example.com/x' } },
      { type: 'webhook', name: 'x', config: { url: 'not a url' } },
      // An internal address the guard refuses, as for event webhooks.
      { type: 'webhook', name: 'x', config: { url: 'http://10.1.2.3/hook' } },
      { type: 'slack', name: 'x', config: { webhook_url: 'http://169.254.169.254/latest' } },
      { type: 'slack', name: 'x', config: { to: ['a@example.com'] } },
      { type: 'email', name: 'x', config: { to: [] } },
      { type: 'email', name: 'x', config: { to: ['not-an-address'] } },
      { type: 'email', name: 'x', config: { to: Array.from({ length: 21 }, (_, i) => `u${i}@example.com`) } },
      { type: 'agent', name: 'x', config: { agent_id: 'admin' } },
      { type: 'agent', name: 'x', config: { agent_id: 'ok', extra: true } },
      { type: 'agent', name: '', config: { agent_id: 'ok' } },
      { type: 'agent', name: 'x'.repeat(201), config: { agent_id: 'ok' } },
      { type: 'agent', name: 'x', config: { agent_id: 'ok' }, secret: 'mine' },
    ];
    for (const body of bad) {
      const res = await server.api.post(C, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    expect((await server.api.get(C)).body.meta.total).toBe(0);
    const { id } = await create({ type: 'agent', name: 'triage', config: { agent_id: 'triage-bot' } });
    const other = await server.api.patch(`${C}/${id}`, { config: { url: 'https://example.com' } });
    expect(other.status).toBe(400);
    expect(other.body.error.message).toMatch(/agent channel's config is \{"agent_id"\}/);
    expect((await server.api.patch(`${C}/${id}`, { type: 'webhook' })).status).toBe(400);
    // A Slack URL as it is shown (cut to its origin) is not taken back as the URL.
    const slack = await create({ type: 'slack', name: 'ops', config: { webhook_url: 'https://hooks.slack.com/services/T0/B0/token' } });
    const echoed = await server.api.patch(`${C}/${slack.id}`, { config: slack.config });
    expect(echoed.status).toBe(400);
    expect(echoed.body.error.message).toMatch(/whole incoming-webhook URL/);
    expect((await server.api.get(`${C}/ntc_nope`)).status).toBe(404);
    expect((await server.api.post(`${C}/ntc_nope/test`)).status).toBe(404);
  });

  it('is for admins only: an agent key gets 403 on every route', async () => {
    const { id } = await create({ type: 'agent', name: 'triage', config: { agent_id: 'triage-bot' } });
    const agent = await server.agent('channel-snoop');
    const calls = [
      agent.post(C, { type: 'agent', name: 'mine', config: { agent_id: 'channel-snoop' } }),
      agent.get(C),
      agent.get(`${C}/${id}`),
      agent.patch(`${C}/${id}`, { name: 'mine' }),
      agent.delete(`${C}/${id}`),
      agent.post(`${C}/${id}/test`),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status, res.text).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    expect((await server.api.get(C, { key: null })).status).toBe(401);
  });

  it('webhook: POSTs the test notification signed with the channel’s secret, retried like an event webhook', async () => {
    const target = await receiver((index) => (index === 0 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }));
    const channel = await create({ type: 'webhook', name: 'hook', config: { url: target.url } });
    const sent = await test(channel.id);
    expect(sent).toMatchObject({ channel_id: channel.id, message_id: null });
    expect(sent.notification_id).toMatch(/^ntf_/);
    const failed = await delivery(server, channel.id, sent.delivery_id!, (d) => d.attempts === 1 && d.latency_ms !== null);
    expect(failed).toMatchObject({ status: 'pending', last_status_code: 503, event_type: 'notification', event_id: sent.notification_id });
    clock.set(Date.parse(failed.next_attempt_at));
    expect(await delivery(server, channel.id, sent.delivery_id!, (d) => d.status === 'delivered')).toMatchObject({
      attempts: 2,
      last_status_code: 200,
    });

    const [first, second] = await target.until(2);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(first!.headers['webhook-id']).toBe(sent.notification_id);
    const body = new Webhook(channel.secret!).verify(second!.body, second!.headers as Record<string, string>);
    expect(body).toMatchObject({
      id: sent.notification_id,
      type: 'notification',
      channel_id: channel.id,
      data: {
        title: 'Test notification',
        severity: 'info',
        link: `${server.url}/console`,
        fields: [{ name: 'Channel', value: `hook (${channel.id})` }],
      },
    });
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(second!.body, second!.headers as Record<string, string>),
    ).toThrow();
    const attempts = await server.api.get(`/api/v1/webhooks/${channel.id}/deliveries/${sent.delivery_id}/attempts`);
    expect(attempts.body.data.map((a: { status_code: number }) => a.status_code)).toEqual([503, 200]);
  });

  it('slack: sends a Block Kit message Slack accepts; a step waiting for a person gets Approve and Open link buttons', async () => {
    const slack = await receiver((_index, request) =>
      validSlackMessage(JSON.parse(request.body)) ? { status: 200, body: 'ok' } : { status: 400, body: 'invalid_blocks' },
    );
    const channel = await create({ type: 'slack', name: 'ops', config: { webhook_url: slack.url } });
    const sent = await test(channel.id);
    expect(await delivery(server, channel.id, sent.delivery_id!, (d) => d.status !== 'pending' || d.latency_ms !== null)).toMatchObject({
      status: 'delivered',
      last_status_code: 200,
      response_body: 'ok',
    });
    const [request] = await slack.until(1);
    const message = JSON.parse(request!.body);
    expect(validSlackMessage(message), JSON.stringify(validSlackMessage.errors)).toBe(true);
    expect(message.text).toBe('[info] Test notification');
    expect(message.blocks.map((b: { type: string }) => b.type)).toEqual(['header', 'section', 'section', 'actions', 'context']);
    expect(message.blocks[0].text.text).toContain('Test notification');
    expect(message.blocks[3].elements).toEqual([
      expect.objectContaining({ type: 'button', text: { type: 'plain_text', text: 'Open' }, url: `${server.url}/console` }),
    ]);

    // The rendering of a human step (what approval notifications send), against the same schema.
    const approval = JSON.parse(
      slackBody({
        title: `Approve the deploy ${'x'.repeat(300)}`,
        text: 'Ship <release> & tell people',
        severity: 'warning',
        link: 'https://switchboard.example/console/runs/run_1',
        fields: Array.from({ length: 12 }, (_, i) => ({ name: `f${i}`, value: 'v'.repeat(3000) })),
        human_step: { run_id: 'run_1', step_id: 'review', approve_url: 'https://switchboard.example/api/v1/approvals/tok.sig' },
      }),
    );
    expect(validSlackMessage(approval), JSON.stringify(validSlackMessage.errors)).toBe(true);
    // The stand-in refuses what Slack refuses: a header in mrkdwn, one too long, a button without text.
    expect(validSlackMessage({ blocks: [{ type: 'header', text: { type: 'mrkdwn', text: 'x' } }] })).toBe(false);
    expect(validSlackMessage({ blocks: [{ type: 'header', text: { type: 'plain_text', text: 'x'.repeat(151) } }] })).toBe(false);
    expect(validSlackMessage({ blocks: [{ type: 'actions', elements: [{ type: 'button', url: 'https://x' }] }] })).toBe(false);
    const actions = approval.blocks.find((b: { type: string }) => b.type === 'actions');
    expect(actions.elements.map((e: { text: { text: string }; url: string }) => [e.text.text, e.url])).toEqual([
      ['Approve', 'https://switchboard.example/api/v1/approvals/tok.sig'],
      ['Open', 'https://switchboard.example/console/runs/run_1'],
    ]);
    expect(approval.blocks[1].text.text).toBe('Ship &lt;release&gt; &amp; tell people');
    expect(JSON.stringify(approval.blocks.at(-1))).toContain('run run_1, step review');
  });

  it('email: mails plain text and HTML over SMTP, retried with backoff after a refusal', async () => {
    const before = smtp.mails.length;
    // The next message's recipients are refused (451): the first attempt fails, the retry delivers.
    smtpRefusals = new Set([smtp.started()]);
    const channel = await create({ type: 'email', name: 'on call', config: { to: ['oncall@example.com', 'lead@example.com'] } });
    expect(channel).not.toHaveProperty('secret');
    const sent = await test(channel.id);
    const failed = await delivery(server, channel.id, sent.delivery_id!, (d) => d.attempts === 1 && d.latency_ms !== null);
    expect(failed.status).toBe('pending');
    expect(failed.error).toMatch(/451/);
    const retryAt = Date.parse(failed.next_attempt_at);
    expect(retryAt - clock.now()).toBeGreaterThan(0);
    expect(retryAt - clock.now()).toBeLessThanOrEqual(30_000);
    clock.set(retryAt);
    const delivered = await delivery(server, channel.id, sent.delivery_id!, (d) => d.status === 'delivered');
    expect(delivered).toMatchObject({ attempts: 2, last_status_code: null, error: null });
    expect(delivered.response_body).toMatch(/^250/);
    const metrics = (await server.api.get('/metrics')).text;
    expect(metrics).toMatch(/switchboard_notifications_total\{channel_type="email",outcome="failed"\} [1-9]/);
    expect(metrics).toMatch(/switchboard_notifications_total\{channel_type="email",outcome="delivered"\} [1-9]/);

    const [mail] = (await smtp.until(before + 1)).slice(before);
    expect(mail!.from).toBe('alerts@switchboard.test');
    expect(mail!.to).toEqual(['oncall@example.com', 'lead@example.com']);
    const raw = decoded(mail!.raw);
    expect(raw).toMatch(/^Subject: \[info\] Test notification$/m);
    expect(raw).toMatch(/^From: Alerts <alerts@switchboard\.test>$/m);
    expect(raw).toContain(`X-Switchboard-Notification-ID: ${sent.notification_id}`);
    expect(raw).toMatch(/Content-Type: multipart\/alternative/);
    expect(raw).toMatch(/Content-Type: text\/plain/);
    expect(raw).toMatch(/Content-Type: text\/html/);
    expect(raw).toContain(`Open: ${server.url}/console`);
    expect(raw).toContain(`<a href="${server.url}/console">Open</a>`);
  });

  it('agent: puts the notification into the agent’s inbox as a `notification` message', async () => {
    const channel = await create({ type: 'agent', name: 'triage', config: { agent_id: 'triage-bot' } });
    const sent = await test(channel.id);
    expect(sent).toMatchObject({ channel_id: channel.id, delivery_id: null });
    const triage = await server.agent('triage-bot');
    const message = await receiveOne(triage, 'triage-bot');
    expect(message).toMatchObject({
      message_id: sent.message_id,
      source: 'switchboard',
      event_name: 'notification',
      payload: { notification_id: sent.notification_id, channel_id: channel.id, title: 'Test notification', severity: 'info' },
    });
    const metrics = await server.api.get('/metrics');
    expect(metrics.text).toMatch(/switchboard_notifications_total\{channel_type="agent",outcome="delivered"\} [1-9]/);
  });

  it('delivers each notification once from two nodes on the same database', async () => {
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey, clock, env });
    try {
      const target = await receiver();
      const channel = await create({ type: 'webhook', name: 'twice', config: { url: target.url } });
      const count = 10;
      const sent = await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const res = await (i % 2 === 0 ? server : second).api.post(`${C}/${channel.id}/test`);
          expect(res.status, res.text).toBe(202);
          return res.body.data.notification_id as string;
        }),
      );
      await waitFor(async () => {
        const all = (await server.api.get(`/api/v1/webhooks/${channel.id}/deliveries?limit=500`)).body.data as { status: string }[];
        return all.length === count && all.every((d) => d.status === 'delivered');
      }, 15_000);
      const ids = target.received.map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(count);
      expect(new Set(ids)).toEqual(new Set(sent));
    } finally {
      await second.close();
    }
  });

  it('is managed through the SDK (client.notifications.*), and a webhook channel’s deliveries through client.webhooks', async () => {
    const client = new Switchboard({ url: server.url, apiKey: server.adminKey });
    const target = await receiver();
    const created = await client.notifications.createChannel({ body: { type: 'webhook', name: 'sdk', config: { url: target.url } } });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await client.notifications.listChannels()).map((c) => c.id)).toEqual([created.id]);
    expect(await client.notifications.getChannel({ path: { id: created.id } })).toMatchObject({ name: 'sdk', type: 'webhook' });
    expect(await client.notifications.updateChannel({ path: { id: created.id }, body: { name: 'renamed' } })).toMatchObject({
      name: 'renamed',
    });
    const sent = await client.notifications.testChannel({ path: { id: created.id } });
    const [request] = await target.until(1);
    expect(verifyWebhook(created.secret!, request!.headers, request!.body)).toMatchObject({
      id: sent.notification_id,
      type: 'notification',
    });
    await waitFor(
      async () => (await client.webhooks.deliveries({ path: { id: created.id }, query: { status: 'delivered' } })).length === 1,
      10_000,
    );
    expect(await client.notifications.deleteChannel({ path: { id: created.id } })).toEqual({ id: created.id, deleted: true });
  });
});

describeEachDialect('notification channels without an SMTP server', (dialect) => {
  const server = useServer(dialect);

  it('refuses email channels with 400, and takes the other types', async () => {
    const res = await server.api.post(C, { type: 'email', name: 'on call', config: { to: ['oncall@example.com'] } });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.message).toMatch(/SWITCHBOARD_SMTP_URL/);
    expect((await server.api.post(C, { type: 'agent', name: 'triage', config: { agent_id: 'triage-bot' } })).status).toBe(201);
  });
});
