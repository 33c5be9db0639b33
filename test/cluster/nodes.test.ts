import { expect, it } from 'vitest';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

interface NodeEntry {
  id: string;
  version: string;
  host: string;
  pid: number;
  started_at: string;
  last_seen_at: string;
  status: 'up' | 'down';
  workers?: { name: string }[];
}

describeEachDialect('cluster nodes', (dialect) => {
  const server = useServer(dialect);

  async function nodes(): Promise<NodeEntry[]> {
    const res = await server.api.get('/api/v1/cluster/nodes');
    expect(res.status).toBe(200);
    return res.body.data as NodeEntry[];
  }

  it('lists this node as up, with its version and start time (admin only)', async () => {
    const list = await nodes();
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ version: '0.1.0', pid: process.pid, status: 'up' });
    expect(list[0]!.id).toMatch(/^node_/);
    expect(Date.parse(list[0]!.last_seen_at)).toBeGreaterThanOrEqual(Date.parse(list[0]!.started_at));
    const res = await server.api.get('/api/v1/cluster/nodes');
    expect(res.body.meta).toMatchObject({ total: 1, limit: 50, offset: 0 });

    const agent = await server.agent('nosy');
    const refused = await agent.get('/api/v1/cluster/nodes');
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    const bad = await server.api.get('/api/v1/cluster/nodes?limit=0');
    expect(bad.status).toBe(400);
  });

  it('shows a second node while it runs and marks it down at once on a clean shutdown', async () => {
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey });
    let secondId: string | undefined;
    try {
      const list = await nodes();
      expect(list.map((n) => n.status)).toEqual(['up', 'up']);
      secondId = list[1]!.id;
      // Only the node that answers knows its workers; the second one shows its own in its answers.
      expect(list[0]!.workers?.length).toBeGreaterThan(0);
      expect(list[1]).not.toHaveProperty('workers');
      const fromSecond = (await second.api.get('/api/v1/cluster/nodes')).body.data as NodeEntry[];
      expect(fromSecond.map((n) => n.workers !== undefined)).toEqual([false, true]);
    } finally {
      await second.close();
    }
    const after = await nodes();
    expect(after.find((n) => n.id === secondId)?.status).toBe('down');
    expect(after.filter((n) => n.status === 'up')).toHaveLength(1);
  });

  it('shows a node whose last heartbeat is over 30 s old as down, and sweeps nodes silent for a day', async () => {
    // A node whose clock runs 40 s behind writes heartbeats that are 40 s old for everyone else.
    const late = await startServer(dialect, {
      database: server.database,
      adminKey: server.adminKey,
      clock: new FakeClock(Date.now() - 40_000),
    });
    try {
      const entry = (await nodes()).find((n) => n.pid === process.pid && Date.parse(n.last_seen_at) < Date.now() - 30_000);
      expect(entry?.status).toBe('down');
    } finally {
      await late.close();
    }
    // One that was last seen 25 h ago is deleted by the next heartbeat of a live node (every 5 s).
    const ancient = await startServer(dialect, {
      database: server.database,
      adminKey: server.adminKey,
      clock: new FakeClock(Date.now() - 25 * 3600_000),
    });
    await ancient.close();
    await waitFor(async () => (await nodes()).every((n) => Date.parse(n.last_seen_at) > Date.now() - 24 * 3600_000), 8000, 200);
  }, 20_000);
});
