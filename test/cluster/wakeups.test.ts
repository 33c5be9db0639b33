import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import type { Api } from '../helpers/api.js';
import { useTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { longPollWaiting } from '../helpers/long-poll.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { startTcpProxy, throughProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const M = '/api/v1/messaging';

/** Starts a long poll on `agent`'s inbox; resolves with the response and when it came. */
function longPoll(client: Api, agent: string, seconds: number): Promise<{ status: number; messages: { payload: unknown }[]; at: number }> {
  return client
    .get(`${M}/receive?agent_id=${agent}&timeout=${seconds}`)
    .then((res) => ({ status: res.status, messages: res.body.data?.messages ?? [], at: Date.now() }));
}

async function send(client: Api, destination: string, payload: unknown): Promise<number> {
  const res = await client.post(`${M}/send`, { destination, event_name: 'wake', payload });
  expect(res.status).toBe(201);
  return Date.now();
}

/** The same database reached through `proxy`. */
function viaProxy(database: TestDatabase, proxy: TcpProxy): TestDatabase {
  const url = throughProxy(database.databaseUrl!, proxy);
  return { ...database, databaseUrl: url, env: { ...database.env, DATABASE_URL: url } };
}

describeEachDialect('cluster wake-ups', (dialect) => {
  const database = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const cluster = dialect === 'postgres';

  it.skipIf(!cluster)(
    'with SWITCHBOARD_PG_LISTEN=off, wakes a long poll on another node within a few polls and sees revocations at once',
    async () => {
      const env = { SWITCHBOARD_PG_LISTEN: 'off' };
      const a = await startServer(dialect, { database: database(), adminKey, env });
      const b = await startServer(dialect, { database: database(), adminKey, env });
      try {
        for (let i = 0; i < 3; i++) {
          const polled = b.requestArrival('GET', `${M}/receive?agent_id=polled&`);
          const poll = longPoll(b.api, 'polled', 20);
          await polled;
          const sentAt = await send(a.api, 'polled', { i });
          const got = await poll;
          expect(got.messages.map((m) => m.payload)).toEqual([{ i }]);
          // Polls every 250 ms: well under a second, against the 20 s the poll would wait unwoken.
          expect(got.at - sentAt).toBeLessThan(1500);
        }
        const key = await a.api.post('/api/v1/auth/keys', { agent_id: 'revoked', role: 'agent' });
        const agentOnB = b.api.withKey(key.body.data.key);
        expect((await agentOnB.get('/api/v1/auth/whoami')).status).toBe(200);
        expect((await a.api.delete(`/api/v1/auth/keys/${key.body.data.id}`)).status).toBe(200);
        expect((await agentOnB.get('/api/v1/auth/whoami')).status).toBe(401);
      } finally {
        await b.close();
        await a.close();
      }
    },
    30_000,
  );

  it.skipIf(!cluster)(
    'answers 503 (never 500) and /readyz 503 while the database is out of reach, then recovers by itself; a long poll waiting across it gets a message sent after',
    async () => {
      const target = new URL(database().databaseUrl!);
      const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
      // Node B reaches PostgreSQL through the proxy; node A directly.
      const a = await startServer(dialect, { database: database(), adminKey });
      const b = await startServer(dialect, { database: viaProxy(database(), proxy), adminKey });
      try {
        expect((await fetch(`${b.url}/readyz`)).status).toBe(200);
        const waiting = longPollWaiting('across');
        const poll = longPoll(b.api, 'across', 30);
        await waiting;
        await proxy.cut();
        const unready = await fetch(`${b.url}/readyz`);
        expect([unready.status, ((await unready.json()) as { checks: { database: string } }).checks.database]).toEqual([503, 'down']);
        // Its LISTEN connection went with it: the node says it is reconnecting.
        await waitFor(
          async () => ((await (await fetch(`${b.url}/readyz`)).json()) as { checks: { listen: string } }).checks.listen === 'reconnecting',
          10_000,
          100,
        );
        const during = await b.api.post(`${M}/send`, { destination: 'x', event_name: 'e', payload: {} });
        expect(during.status).toBe(503);
        expect(during.body.error.code).toBe('service_unavailable');
        expect(during.text).not.toMatch(/ECONNREFUSED|stack|at /);
        await proxy.restore();
        await waitFor(async () => (await fetch(`${b.url}/readyz`)).status === 200, 10_000, 100);
        // Its LISTEN connection comes back too (with backoff).
        await waitFor(
          async () => ((await (await fetch(`${b.url}/readyz`)).json()) as { checks: { listen: string } }).checks.listen === 'listening',
          15_000,
          100,
        );
        const sentAt = await send(a.api, 'across', { after: true });
        const got = await poll;
        expect(got.status).toBe(200);
        expect(got.messages.map((m) => m.payload)).toEqual([{ after: true }]);
        expect(got.at - sentAt).toBeLessThan(5000);
      } finally {
        await b.close();
        await a.close();
        await proxy.close();
      }
    },
    60_000,
  );

  it.skipIf(!cluster)(
    'rescans when the LISTEN connection comes back: a message sent while it was down wakes a waiting long poll',
    async () => {
      const target = new URL(database().databaseUrl!);
      const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
      const a = await startServer(dialect, { database: database(), adminKey });
      const b: TestServer = await startServer(dialect, { database: viaProxy(database(), proxy), adminKey });
      try {
        const waiting = longPollWaiting('lost');
        const poll = longPoll(b.api, 'lost', 30);
        await waiting;
        // Node B's connections drop; the NOTIFY of this send reaches no LISTEN of B's.
        await proxy.cut();
        const sentAt = await send(a.api, 'lost', { lost: true });
        await proxy.restore();
        const got = await poll;
        expect(got.messages.map((m) => m.payload)).toEqual([{ lost: true }]);
        // The notifier reconnects after 250 ms and rescans: not the 30 s the poll would wait.
        expect(got.at - sentAt).toBeLessThan(5000);
      } finally {
        await b.close();
        await a.close();
        await proxy.close();
      }
    },
    60_000,
  );
});
