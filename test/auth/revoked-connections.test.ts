import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { SendMessageRequest, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { expect, it } from 'vitest';
import WebSocket from 'ws';
import { acknowledge, receiveOne } from '../helpers/agent.js';
import { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { within } from '../helpers/wait.js';
import { openStream } from '../events/sse.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli.js');
const CHANNEL = '/api/v1/messaging/channel';

/** An open agent channel: how it closed, once it has. */
async function openChannel(
  baseUrl: string,
  key: string,
): Promise<{ socket: WebSocket; closed: Promise<{ code: number; reason: string }> }> {
  const socket = new WebSocket(baseUrl.replace(/^http/, 'ws') + CHANNEL, { headers: { authorization: `Bearer ${key}` } });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return { socket, closed };
}

/** Answers a heartbeat frame: the channel works. */
function heartbeat(socket: WebSocket): Promise<Record<string, any>> {
  return within(
    new Promise((resolve) => {
      socket.once('message', (data) => resolve(JSON.parse(String(data)) as Record<string, any>));
      socket.send(JSON.stringify({ id: 1, heartbeat: {} }));
    }),
    10_000,
    'heartbeat answer',
  );
}

async function agentKey(server: TestServer, agentId: string): Promise<{ id: string; key: string }> {
  const res = await server.api.post('/api/v1/auth/keys', { agent_id: agentId, role: 'agent' });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.data.id, key: res.body.data.key };
}

/**
 * A revoked key ends the connections it opened, as its next request is refused: the agent
 * channel closes with 1008, the event stream and A2A streams end, on the node that revoked it,
 * on the others, and when the CLI revoked it.
 */
describeEachDialect('connections of a revoked key', (dialect) => {
  const server = useServer(dialect);

  it('revoking by the API closes its channel with 1008', async () => {
    const { id, key } = await agentKey(server, 'revoked-channel');
    const channel = await openChannel(server.url, key);
    try {
      expect((await heartbeat(channel.socket)).ok).toBeDefined();
      expect((await server.api.delete(`/api/v1/auth/keys/${id}`)).status).toBe(200);
      expect(await within(channel.closed, 5000, 'the channel to close')).toEqual({ code: 1008, reason: 'API key revoked' });
    } finally {
      channel.socket.terminate();
    }
  });

  it('revoking by the API ends its event stream', async () => {
    const { id, key } = await agentKey(server, 'revoked-events');
    const events = await openStream(server.url, key);
    try {
      expect((await server.api.delete(`/api/v1/auth/keys/${id}`)).status).toBe(200);
      await within(events.ended, 5000, 'the event stream to end');
    } finally {
      events.close();
    }
  });

  it('revoking by the API ends its A2A stream before the task’s output', async () => {
    const { id, key } = await agentKey(server, 'revoked-a2a');
    const worker = await server.agent('revoked-a2a-worker');
    const capability = await worker.post('/api/v1/discovery/capabilities', {
      agent_id: 'revoked-a2a-worker',
      capability: 'work',
      metadata: {},
    });
    expect(capability.status, capability.text).toBe(201);
    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${key}`);
      return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
    const a2a = await factory.createFromUrl(`${server.url}/a2a/revoked-a2a-worker/`);
    const stream = a2a.sendMessageStream(
      SendMessageRequest.fromJSON({
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] },
        configuration: { returnImmediately: false },
      }),
    );
    expect((await stream.next()).value?.payload?.$case).toBe('task');
    const message = await receiveOne(worker, 'revoked-a2a-worker');

    expect((await server.api.delete(`/api/v1/auth/keys/${id}`)).status).toBe(200);
    await acknowledge(worker, message.message_id, 'secret output');
    const after: StreamResponse[] = [];
    await within(
      (async () => {
        try {
          for await (const event of stream) after.push(event);
        } catch {
          // The stream ended: as an error or not, what matters is what it told.
        }
      })(),
      5000,
      'the A2A stream to end',
    );
    expect(after.filter((event) => event.payload?.$case === 'artifactUpdate')).toEqual([]);
  });

  it('refuses a key revoked by the CLI on its open channel: closed with 1008', async () => {
    const { id, key } = await agentKey(server, 'cli-revoked-conn');
    const channel = await openChannel(server.url, key);
    try {
      expect((await heartbeat(channel.socket)).ok).toBeDefined();
      await run(process.execPath, [CLI, 'keys', 'revoke', id], {
        env: {
          PATH: process.env.PATH,
          SWITCHBOARD_DATA_DIR: server.database.dataDir,
          SWITCHBOARD_LOG_LEVEL: 'silent',
          ...(server.database.databaseUrl ? { DATABASE_URL: server.database.databaseUrl } : {}),
        },
      });
      expect(await within(channel.closed, 5000, 'the channel to close')).toEqual({ code: 1008, reason: 'API key revoked' });
    } finally {
      channel.socket.terminate();
    }
  }, 60_000);

  for (const listen of ['on', 'off']) {
    it.runIf(dialect === 'postgres')(
      `ends a key's channel and event stream on node A when node B revokes it (SWITCHBOARD_PG_LISTEN=${listen})`,
      async () => {
        const env = { SWITCHBOARD_PG_LISTEN: listen };
        const first = await startServer(dialect, { database: server.database, adminKey: server.adminKey, env });
        const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey, env });
        try {
          const created = await first.api.post('/api/v1/auth/keys', { agent_id: `roaming-conn-${listen}`, role: 'agent' });
          const { id, key } = created.body.data as { id: string; key: string };
          const channel = await openChannel(first.url, key);
          const events = await openStream(first.url, key);
          try {
            expect((await heartbeat(channel.socket)).ok).toBeDefined();
            expect((await new Api(second.url, server.adminKey).delete(`/api/v1/auth/keys/${id}`)).status).toBe(200);
            expect(await within(channel.closed, 5000, 'the channel on node A to close')).toEqual({ code: 1008, reason: 'API key revoked' });
            await within(events.ended, 5000, 'the event stream on node A to end');
          } finally {
            channel.socket.terminate();
            events.close();
          }
        } finally {
          await second.close();
          await first.close();
        }
      },
      60_000,
    );
  }
});
