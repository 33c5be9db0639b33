import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Issue 24: PostgreSQL itself restarted under light load. It stops the server every other test
 * uses, so it runs only with SWITCHBOARD_TEST_PG_RESTART=1, and `.ci/run` runs it as its own
 * step after the main suite, never beside other tests.
 */
const enabled = process.env.SWITCHBOARD_TEST_PG_RESTART === '1';

function pgctl(action: 'stop' | 'start'): void {
  const version = fs.readdirSync('/etc/postgresql').sort()[0]!;
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', action], { stdio: 'inherit' });
}

describeEachDialect('PostgreSQL restarted under two nodes', (dialect) => {
  const database = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;

  it.skipIf(dialect !== 'postgres' || !enabled)(
    'answers 503s, never 500s, while it is down; recovers by itself; a long poll waiting across it gets a message sent after',
    async () => {
      const nodes: TestServer[] = [
        await startServer(dialect, { database: database(), adminKey }),
        await startServer(dialect, { database: database(), adminKey }),
      ];
      const statuses = new Map<number, number>();
      let loading = true;
      try {
        // Light load on both nodes: sends and reads, one at a time per node.
        const load = nodes.map(async (node, i) => {
          for (let n = 0; loading; n++) {
            const res =
              n % 2 === 0
                ? await node.api.post('/api/v1/messaging/send', { destination: `load-${i}`, event_name: 'e', payload: { n } })
                : await node.api.get('/api/v1/auth/whoami');
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            // The load's pace, not a wait for something.
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        });
        const polled = nodes[1]!.requestArrival('GET', '/api/v1/messaging/receive?agent_id=patient&');
        const poll = nodes[1]!.api.get('/api/v1/messaging/receive?agent_id=patient&timeout=30');
        await polled;
        // Past its first look (a look the stop cuts answers 503, as any request would): it waits.
        await new Promise((resolve) => setTimeout(resolve, 500));
        pgctl('stop');
        await waitFor(async () => (await fetch(`${nodes[0]!.url}/readyz`)).status === 503, 10_000, 100);
        // Down for a real while, under the load: the outage's length is what the nodes live through.
        await new Promise((resolve) => setTimeout(resolve, 2000));
        pgctl('start');
        for (const node of nodes) await waitFor(async () => (await fetch(`${node.url}/readyz`)).status === 200, 30_000, 200);
        // Sent whether or not node 2's LISTEN is back yet: if not, its rescan on reconnect finds it.
        const sent = await nodes[0]!.api.post('/api/v1/messaging/send', {
          destination: 'patient',
          event_name: 'after',
          payload: { after: true },
        });
        expect(sent.status).toBe(201);
        const got = await poll;
        expect(got.status).toBe(200);
        expect(got.body.data.messages.map((m: { payload: unknown }) => m.payload)).toEqual([{ after: true }]);
        loading = false;
        await Promise.all(load);
        expect(statuses.get(500) ?? 0).toBe(0);
        expect([...statuses.keys()].every((status) => [200, 201, 503].includes(status))).toBe(true);
        expect(statuses.get(503) ?? 0).toBeGreaterThan(0);
      } finally {
        loading = false;
        for (const node of nodes) await node.close();
      }
    },
    90_000,
  );
});
