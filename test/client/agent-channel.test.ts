import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it, vi } from 'vitest';
import {
  ChannelClosedError,
  createAgent,
  PermanentError,
  Switchboard,
  SwitchboardError,
  type Agent,
  type Message,
} from '../../src/client/index.js';
import { signingClient } from '../../examples/connect.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

/** A latch the test opens: handlers wait on it instead of sleeping. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * An HTTP proxy to `target` that passes requests and answers every WebSocket upgrade with a 404
 * (a server without the channel, or a proxy that does not pass WebSockets).
 */
async function proxyWithoutWebSockets(target: string) {
  const to = new URL(target);
  const server = http.createServer((request, response) => {
    const upstream = http.request(
      { host: to.hostname, port: to.port, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  server.on('upgrade', (_request, socket) => {
    socket.end(
      'HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"error":{"code":"not_found","message":"no such route"}}',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describeEachDialect('the SDK over the agent channel', (dialect) => {
  const server = useServer(dialect);
  const admin = () => new Switchboard({ url: server.url, apiKey: server.adminKey });

  /** The handler code both transports run: an output for `work`, a permanent failure for `bad`. */
  function worker(client: Switchboard, agentId: string, transport: 'auto' | 'channel' | 'poll', seen: Message[]): Agent {
    return createAgent({ client, agentId, transport, heartbeatIntervalMs: 0, pollTimeoutSeconds: 1, concurrency: 3 })
      .on('work', (message) => {
        seen.push(message);
        return { doubled: (message.payload as { n: number }).n * 2 };
      })
      .on('bad', () => {
        throw new PermanentError('cannot');
      });
  }

  for (const transport of ['channel', 'poll'] as const) {
    it(`runs the same handlers over ${transport === 'channel' ? 'the channel' : 'long polling'}: outputs acknowledged, failures dead-lettered`, async () => {
      const agentId = `same-${transport}`;
      const client = await signingClient(admin(), agentId);
      const seen: Message[] = [];
      const agent = worker(client, agentId, transport, seen);
      await agent.start();
      try {
        expect(agent.transport).toBe(transport);
        const sent = [];
        for (let n = 0; n < 6; n++)
          sent.push(await admin().messaging.send({ body: { destination: agentId, event_name: 'work', payload: { n } } }));
        const bad = await admin().messaging.send({ body: { destination: agentId, event_name: 'bad' } });
        await waitFor(() => seen.length === 6, 10_000);
        expect(seen.map((m) => (m.payload as { n: number }).n).sort()).toEqual([0, 1, 2, 3, 4, 5]);
        const dead = await waitFor(
          async () =>
            (await admin().messaging.listDeadLetters({ query: { agent_id: agentId } })).find((d) => d.message_id === bad.message_id),
          10_000,
        );
        expect(dead.reason).toBe('cannot');
        await waitFor(async () => {
          const [inbox] = await admin().messaging.listInboxes({ query: { agent_id: agentId } });
          return inbox!.pending === 0 && inbox!.leased === 0;
        }, 10_000);
        expect(sent.map((s) => s.message_id).sort()).toEqual(seen.map((m) => m.message_id).sort());
      } finally {
        await agent.stop();
      }
    }, 30_000);
  }

  it('holds as many messages as its concurrency (the credit), and takes more as handlers finish', async () => {
    const client = await signingClient(admin(), 'credit-agent');
    const release = gate();
    let handled = 0;
    const agent = createAgent({ client, agentId: 'credit-agent', transport: 'channel', heartbeatIntervalMs: 0, concurrency: 2 }).on(
      'work',
      async () => {
        await release.opened;
        handled++;
      },
    );
    await agent.start();
    try {
      for (let n = 0; n < 5; n++)
        await admin().messaging.send({ body: { destination: 'credit-agent', event_name: 'work', payload: { n } } });
      await waitFor(() => agent.inFlight === 2);
      const [inbox] = await admin().messaging.listInboxes({ query: { agent_id: 'credit-agent' } });
      expect(inbox).toMatchObject({ pending: 3, leased: 2 });
      release.open();
      await waitFor(() => handled === 5, 10_000);
    } finally {
      await agent.stop();
    }
  }, 20_000);

  it("heartbeats over the channel's frames, not over HTTP", async () => {
    const client = await signingClient(admin(), 'beating-agent');
    const fetches = vi.spyOn(globalThis, 'fetch');
    const agent = createAgent({ client, agentId: 'beating-agent', transport: 'channel', heartbeatIntervalMs: 50 });
    await agent.start();
    try {
      const health = await waitFor(async () => {
        const record = await admin()
          .discovery.agentHealth({ path: { agent_id: 'beating-agent' } })
          .catch(() => undefined);
        return record?.status === 'healthy' ? record : undefined;
      });
      expect(health.load).toBe(0);
      expect(fetches.mock.calls.map(([url]) => String(url)).filter((url) => url.includes('/discovery/heartbeat'))).toEqual([]);
    } finally {
      fetches.mockRestore();
      await agent.stop();
    }
  });

  it("'auto' uses the channel when the server offers it and long-polls when the upgrade fails; 'channel' then refuses to start", async () => {
    const client = await signingClient(admin(), 'auto-agent');
    const direct = worker(client, 'auto-agent', 'auto', []);
    await direct.start();
    expect(direct.transport).toBe('channel');
    await direct.stop();

    const proxy = await proxyWithoutWebSockets(server.url);
    try {
      const proxied = new Switchboard({
        url: proxy.url,
        apiKey: (await admin().auth.createKey({ body: { agent_id: 'auto-agent', role: 'agent' } })).key,
      });
      const seen: Message[] = [];
      const logged: string[] = [];
      const agent = createAgent({
        client: proxied,
        agentId: 'auto-agent',
        heartbeatIntervalMs: 0,
        pollTimeoutSeconds: 1,
        logger: { info: (line) => logged.push(line), warn: () => {}, error: () => {} },
      }).on('work', (message) => void seen.push(message));
      await agent.start();
      try {
        expect(agent.transport).toBe('poll');
        expect(logged.join('\n')).toContain('long polling');
        const sent = await admin().messaging.send({ body: { destination: 'auto-agent', event_name: 'work', payload: { n: 1 } } });
        await waitFor(() => seen.some((m) => m.message_id === sent.message_id), 10_000);
      } finally {
        await agent.stop();
      }
      const strict = createAgent({ client: proxied, agentId: 'auto-agent', transport: 'channel', heartbeatIntervalMs: 0 });
      await expect(strict.start()).rejects.toMatchObject({ status: 404, code: 'not_found' });
    } finally {
      await proxy.close();
    }
  }, 30_000);

  it("'auto' does not hide a refusal: acting as another agent fails to start", async () => {
    const client = await signingClient(admin(), 'honest-agent');
    const agent = createAgent({ client, agentId: 'someone-else', heartbeatIntervalMs: 0 });
    const error = await agent.start().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SwitchboardError);
    expect((error as SwitchboardError).status).toBe(403);
  });

  it("keeps a slow handler's lease with extend frames: not delivered again while it runs", async () => {
    const client = await signingClient(admin(), 'slow-channel');
    const fetches = vi.spyOn(globalThis, 'fetch');
    const release = gate();
    const seen: Message[] = [];
    const agent = createAgent({
      client,
      agentId: 'slow-channel',
      transport: 'channel',
      heartbeatIntervalMs: 0,
      visibilityTimeoutSeconds: 2,
    }).on('work', async (message) => {
      seen.push(message);
      await release.opened;
    });
    await agent.start();
    try {
      const sent = await admin().messaging.send({ body: { destination: 'slow-channel', event_name: 'work' } });
      await waitFor(() => seen.length === 1, 10_000);
      const leaseOf = async () =>
        (await admin().messaging.listInboxMessages({ path: { agent_id: 'slow-channel' }, query: { state: 'leased' } }))[0];
      const first = await leaseOf();
      // Extended every second (half the 2 s lease): twice is past the first lease's end.
      await waitFor(async () => Date.parse((await leaseOf())!.lease_expires_at!) >= Date.parse(first!.lease_expires_at!) + 2000, 10_000);
      expect(await admin().messaging.receive({ query: { agent_id: 'slow-channel', timeout: 0 } })).toEqual({ messages: [] });
      release.open();
      await waitFor(async () => (await admin().messaging.listInboxes({ query: { agent_id: 'slow-channel' } }))[0]!.leased === 0, 10_000);
      expect(seen.map((m) => [m.message_id, m.retry_count])).toEqual([[sent.message_id, 0]]);
      expect(
        fetches.mock.calls
          .map(([url]) => String(url))
          .filter((url) => url.includes('/messaging/extend') || url.includes('/messaging/acknowledge')),
      ).toEqual([]);
    } finally {
      fetches.mockRestore();
      release.open();
      await agent.stop();
    }
  }, 30_000);

  it('reopens a dropped channel: one line when the server is lost, one when it is back, and messages flow again', async () => {
    const lines: string[] = [];
    const logger = {
      info: (line: string) => lines.push(`info ${line}`),
      warn: (line: string) => lines.push(`warn ${line}`),
      error: (line: string) => lines.push(`error ${line}`),
    };
    const key = await admin().auth.createKey({ body: { agent_id: 'redialer', role: 'agent' } });
    const proxy = await startTcpProxy('127.0.0.1', Number(new URL(server.url).port));
    let loopErrors = 0;
    const seen: Message[] = [];
    const client = new Switchboard({ url: `http://127.0.0.1:${proxy.port}`, apiKey: key.key });
    const agent = createAgent({
      client,
      agentId: 'redialer',
      transport: 'channel',
      heartbeatIntervalMs: 0,
      logger,
      onError: () => loopErrors++,
    }).on('work', (message) => void seen.push(message));
    await agent.start();
    try {
      await proxy.cut();
      // A close, then a failed reopening a second: one line for all of them.
      await waitFor(() => loopErrors >= 3, 10_000);
      expect(lines).toEqual([
        expect.stringMatching(/^error agent redialer: cannot reach the server \(The channel closed \(1006\)\); retrying$/),
      ]);
      await proxy.restore();
      await waitFor(() => lines.length === 2, 10_000);
      expect(lines[1]).toMatch(/^info agent redialer: reached the server again after \d+ s$/);
      const sent = await admin().messaging.send({ body: { destination: 'redialer', event_name: 'work' } });
      await waitFor(() => seen.some((m) => m.message_id === sent.message_id), 10_000);
      expect(agent.transport).toBe('channel');
    } finally {
      await agent.stop();
      await proxy.cut();
    }
  }, 30_000);

  it('client.channel() as a consumer: grant, onMessage, acknowledge (a repeat in the same tick goes in a later frame)', async () => {
    const client = await signingClient(admin(), 'raw-consumer');
    const channel = await client.channel();
    try {
      const pushed: Message[] = [];
      channel.onMessage((message) => pushed.push(message));
      channel.grant(2);
      const sent = [
        await admin().messaging.send({ body: { destination: 'raw-consumer', event_name: 'a' } }),
        await admin().messaging.send({ body: { destination: 'raw-consumer', event_name: 'b' } }),
      ];
      await waitFor(() => pushed.length === 2);
      expect(pushed.map((m) => m.message_id)).toEqual(sent.map((m) => m.message_id));
      const outcomes = await Promise.allSettled([
        channel.acknowledge(sent[0]!.message_id, { fine: true }),
        channel.acknowledge(sent[0]!.message_id),
        channel.reject({ message_id: sent[1]!.message_id, reason: 'later', delay_seconds: 60 }),
      ]);
      expect(outcomes[0]).toEqual({ status: 'fulfilled', value: undefined });
      expect(outcomes[1]).toMatchObject({ status: 'rejected', reason: { code: 'conflict', status: 409 } });
      expect(outcomes[2]).toMatchObject({ status: 'fulfilled', value: { message_id: sent[1]!.message_id, status: 'requeued' } });
    } finally {
      await channel.close();
    }
  });

  it('client.channel() sends with confirmations under back-pressure, replays an idempotency key, and is shared until closed', async () => {
    const client = await signingClient(admin(), 'channel-sender');
    const channel = await client.channel({ maxUnconfirmedSends: 3 });
    expect(await client.channel()).toBe(channel);
    const sends = await Promise.all(
      Array.from({ length: 20 }, (_, n) => channel.send({ destination: 'channel-sink', event_name: 'many', payload: { n } })),
    );
    expect(new Set(sends.map((s) => s.message_id)).size).toBe(20);
    const first = await channel.send({ destination: 'channel-sink', event_name: 'once', idempotency_key: 'sdk-1' });
    const again = await channel.send({ destination: 'channel-sink', event_name: 'once', idempotency_key: 'sdk-1' });
    expect(again.message_id).toBe(first.message_id);
    const batch = await channel.sendBatch({
      messages: [
        { destination: 'channel-sink', event_name: 'b' },
        { destination: 'channel-sink', event_name: 'b' },
      ],
    });
    expect(batch.messages).toHaveLength(2);
    const [inbox] = await admin().messaging.listInboxes({ query: { agent_id: 'channel-sink' } });
    expect(inbox!.pending).toBe(23);
    // A refused send rejects with the server's error.
    await expect(channel.send({ destination: 'channel-sink', event_name: 'x', source: 'not-me' })).rejects.toMatchObject({
      status: 403,
      code: 'forbidden',
    });
    await channel.close();
    await expect(channel.send({ destination: 'channel-sink', event_name: 'late' })).rejects.toBeInstanceOf(ChannelClosedError);
    const reopened = await client.channel();
    expect(reopened).not.toBe(channel);
    expect((await reopened.send({ destination: 'channel-sink', event_name: 'after' })).status).toBe('sent');
    await reopened.close();
  });
});
