import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, type TestServer } from '../helpers/server.js';

describeEachDialect('cluster-wide rate limits', (dialect) => {
  const database = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;
  // One node on SQLite (its limiter is in memory); three on one PostgreSQL database.
  const nodeCount = dialect === 'postgres' ? 3 : 1;

  async function startNodes(limit: number): Promise<TestServer[]> {
    const nodes: TestServer[] = [];
    for (let i = 0; i < nodeCount; i++)
      nodes.push(await startServer(dialect, { database: database(), adminKey, env: { SWITCHBOARD_RATE_LIMIT: String(limit) } }));
    return nodes;
  }

  it('gives a principal one budget: of 11 requests spread over the nodes, 10 pass and the 11th is refused', async () => {
    const nodes = await startNodes(10);
    try {
      const key = await nodes[0]!.api.post('/api/v1/auth/keys', { agent_id: 'thrifty', role: 'agent' });
      const statuses: number[] = [];
      const remaining: number[] = [];
      for (let i = 0; i < 11; i++) {
        const res = await nodes[i % nodeCount]!.api.withKey(key.body.data.key).get('/api/v1/auth/whoami');
        statuses.push(res.status);
        remaining.push(Number(res.headers.get('x-ratelimit-remaining')));
        expect(res.headers.get('x-ratelimit-limit')).toBe('10');
      }
      expect(statuses).toEqual([...Array(10).fill(200), 429]);
      expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0]);
      // Every node reports the same budget, spent (admin's view of the agent's budget).
      for (const node of nodes) {
        const status = await node.api.get('/api/v1/messaging/rate-limit?agent_id=thrifty');
        expect(status.status).toBe(200);
        expect(status.body.data).toMatchObject({ limit: 10, remaining: 0 });
      }
    } finally {
      for (const node of nodes) await node.close();
    }
  }, 30_000);

  it('leases larger budgets in slices: 300 requests over the nodes leave the cluster view within a few slices of 700', async () => {
    const nodes = await startNodes(1000);
    try {
      const key = await nodes[0]!.api.post('/api/v1/auth/keys', { agent_id: 'busy', role: 'agent' });
      for (let i = 0; i < 300; i += 10) {
        const batch = Array.from({ length: 10 }, (_, j) =>
          nodes[(i + j) % nodeCount]!.api.withKey(key.body.data.key).get('/api/v1/auth/whoami'),
        );
        for (const res of await Promise.all(batch)) expect(res.status).toBe(200);
      }
      const status = await nodes[0]!.api.get('/api/v1/messaging/rate-limit?agent_id=busy');
      // Slices are 1% of the limit (10): each node may hold up to a slice and a half unspent.
      expect(status.body.data.remaining).toBeLessThanOrEqual(700);
      expect(status.body.data.remaining).toBeGreaterThanOrEqual(700 - nodeCount * 15);
    } finally {
      for (const node of nodes) await node.close();
    }
  }, 60_000);
});
