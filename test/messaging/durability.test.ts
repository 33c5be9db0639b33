import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { Api } from '../helpers/api.js';
import { receive } from '../helpers/agent.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { spawnServer } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

describeEachDialect('messaging durability', (dialect) => {
  const suiteDatabase = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;

  it('loses no acknowledged send when the server is killed with SIGKILL mid-load', async () => {
    const first = await spawnServer(suiteDatabase(), adminKey);
    const admin = new Api(first.url, adminKey);
    const confirmed: string[] = [];
    let stop = false;
    // 8 concurrent senders until the kill; a send counts only once its 201 arrived.
    const senders = Array.from({ length: 8 }, async (_, worker) => {
      for (let i = 0; !stop; i++) {
        try {
          const res = await admin.post('/api/v1/messaging/send', { destination: 'durable', event_name: 'load', payload: { worker, i } });
          if (res.status === 201) confirmed.push(res.body.data.message_id);
        } catch {
          return; // the connection died with the server
        }
      }
    });
    await waitFor(() => confirmed.length >= 200, 30_000, 5);
    first.child.kill('SIGKILL');
    stop = true;
    await Promise.all(senders);
    await first.exited;

    const second = await spawnServer(suiteDatabase(), adminKey);
    try {
      const inbox = new Api(second.url, adminKey);
      const received = new Set<string>();
      for (let batch = await receive(inbox, 'durable', 0, 100); batch.length > 0; batch = await receive(inbox, 'durable', 0, 100)) {
        for (const m of batch) received.add(m.message_id);
      }
      const missing = confirmed.filter((id) => !received.has(id));
      expect(missing).toEqual([]);
      expect(confirmed.length).toBeGreaterThanOrEqual(200);
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }
  });

  it('loses no acknowledgement when the server is killed with SIGKILL mid-load', async () => {
    const first = await spawnServer(suiteDatabase(), adminKey);
    const admin = new Api(first.url, adminKey);
    const destination = 'acked-durably';
    for (let i = 0; i < 10; i++) {
      const res = await admin.post('/api/v1/messaging/send-batch', {
        messages: Array.from({ length: 100 }, (_, j) => ({ destination, event_name: 'load', payload: { i, j } })),
      });
      expect(res.status, res.text).toBe(201);
    }
    const acknowledged: string[] = [];
    let stop = false;
    // 8 concurrent consumers that acknowledge one message per call until the kill; an
    // acknowledgement counts only once its 200 arrived. Leases of 1 s: what was leased and not
    // acknowledged comes back soon after the restart.
    const consumers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        try {
          const got = await admin.get(`/api/v1/messaging/receive?agent_id=${destination}&max=1&timeout=0&visibility_timeout=1`);
          const message = got.body.data?.messages?.[0] as { message_id: string } | undefined;
          if (!message) continue;
          const res = await admin.post('/api/v1/messaging/acknowledge', { message_ids: [message.message_id] });
          if (res.status === 200) acknowledged.push(message.message_id);
        } catch {
          return; // the connection died with the server
        }
      }
    });
    await waitFor(() => acknowledged.length >= 150, 30_000, 5);
    first.child.kill('SIGKILL');
    stop = true;
    await Promise.all(consumers);
    await first.exited;

    const second = await spawnServer(suiteDatabase(), adminKey);
    try {
      const inbox = new Api(second.url, adminKey);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const redelivered = new Set<string>();
      for (let batch = await receive(inbox, destination, 0, 100); batch.length > 0; batch = await receive(inbox, destination, 0, 100)) {
        for (const m of batch) redelivered.add(m.message_id);
      }
      expect(acknowledged.filter((id) => redelivered.has(id))).toEqual([]);
      // Every message is one or the other, but for acknowledgements whose answer the kill cut off (one per consumer at most).
      expect(acknowledged.length + redelivered.size).toBeGreaterThanOrEqual(1000 - 8);
      expect(acknowledged.length + redelivered.size).toBeLessThanOrEqual(1000);
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }
  });
});
