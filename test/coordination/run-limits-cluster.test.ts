import { expect, it } from 'vitest';
import { acknowledge, receive } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { P, R, useCoordination } from './fixture.js';

/** Run limits and agents' limits hold across two nodes on one database. */
describeEachDialect('coordination run limits on two nodes', (dialect) => {
  const { server, unique } = useCoordination(dialect);

  it('a plan concurrency limit and a capability max_concurrency hold across nodes', async () => {
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey });
    try {
      const worker = unique('shared');
      const capability = unique('cap');
      const client = await server.agent(worker);
      expect((await client.post('/api/v1/discovery/capabilities', { agent_id: worker, capability, max_concurrency: 3 })).status).toBe(201);
      const created = await server.api.post(P, {
        alias: unique('limited'),
        concurrency: { limit: 2 },
        steps: [{ id: 'work', type: 'agent', agent: worker }],
      });
      expect(created.status, created.text).toBe(201);
      const planId = created.body.data.id as string;
      const nodes = [server.api, second.api];
      const started = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          const res = await nodes[i % 2]!.post(R, { plan_id: planId });
          expect(res.status, res.text).toBe(201);
          return res.body.data as { id: string; status: string };
        }),
      );
      expect(started.filter((r) => r.status === 'running')).toHaveLength(2);
      expect(started.filter((r) => r.status === 'queued')).toHaveLength(8);

      const statuses = async () => {
        const res = await server.api.get(`${R}?plan_id=${planId}&limit=50`);
        return (res.body.data as { status: string }[]).map((r) => r.status);
      };
      let done = 0;
      while (done < 10) {
        const leased = await receive(client, worker, 5, 10);
        expect(leased.length).toBeLessThanOrEqual(2);
        const now = await statuses();
        expect(now.filter((s) => s === 'running' || s === 'waiting').length).toBeLessThanOrEqual(2);
        for (const m of leased) await acknowledge(client, m.message_id, {});
        done += leased.length;
      }
      await waitFor(async () => (await statuses()).every((s) => s === 'completed'), 10_000);

      // The agent's max_concurrency: receives through both nodes at once lease 3 in all.
      for (let i = 0; i < 8; i++)
        expect((await server.api.post('/api/v1/messaging/send', { destination: worker, event_name: 'job' })).status).toBe(201);
      const secondClient = await second.agent(worker);
      const batches = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 === 0 ? client : secondClient).get(`/api/v1/messaging/receive?agent_id=${worker}&max=2&timeout=0`),
        ),
      );
      expect(batches.flatMap((b) => b.body.data.messages)).toHaveLength(3);
    } finally {
      await second.close();
    }
  });

  it('ordering keys hold across nodes: receivers on both lease one message of a key at a time, in send order', async () => {
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey });
    try {
      const worker = unique('keyed');
      const clients = [await server.agent(worker), await second.agent(worker)];
      const sent = new Map<string, string[]>();
      for (let i = 0; i < 24; i++) {
        const key = `conv-${i % 4}`;
        const res = await clients[i % 2]!.post('/api/v1/messaging/send', { destination: worker, event_name: 'turn', ordering_key: key });
        expect(res.status, res.text).toBe(201);
        sent.set(key, [...(sent.get(key) ?? []), res.body.data.message_id as string]);
      }
      const delivered = new Map<string, string[]>();
      for (let round = 0; round < 24 && [...delivered.values()].flat().length < 24; round++) {
        // Four receivers at once, two per node, each asking for more than the keys allow.
        const batches = await Promise.all(
          [0, 1, 0, 1].map((n) => clients[n]!.get(`/api/v1/messaging/receive?agent_id=${worker}&max=4&timeout=0`)),
        );
        const leased = batches.flatMap((b) => b.body.data.messages as { message_id: string; ordering_key: string }[]);
        const keys = leased.map((m) => m.ordering_key);
        expect(new Set(keys).size, `one lease per key at a time: ${keys.join(', ')}`).toBe(keys.length);
        for (const m of leased) delivered.set(m.ordering_key, [...(delivered.get(m.ordering_key) ?? []), m.message_id]);
        for (const [i, m] of leased.entries()) await acknowledge(clients[i % 2]!, m.message_id, {});
      }
      expect(delivered).toEqual(sent);
    } finally {
      await second.close();
    }
  });
});
