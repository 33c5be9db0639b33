import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const M = '/api/v1/messaging';

/** A capability's max_concurrency: the agent never holds more messages leased at once, across receivers. */
describeEachDialect('messaging: agents limited by max_concurrency', (dialect) => {
  const server = useServer(dialect);
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  async function limitedAgent(limit: number) {
    const agentId = unique('limited');
    const client = await server.agent(agentId);
    const res = await client.post('/api/v1/discovery/capabilities', {
      agent_id: agentId,
      capability: unique('cap'),
      max_concurrency: limit,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data.max_concurrency).toBe(limit);
    // A second capability without a limit leaves the smallest one in force.
    await client.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability: unique('other') });
    const receive = async (max = 10, visibility = 30) => {
      const got = await client.get(`${M}/receive?agent_id=${agentId}&max=${max}&visibility_timeout=${visibility}&timeout=0`);
      expect(got.status, got.text).toBe(200);
      return got.body.data.messages as { message_id: string }[];
    };
    return { agentId, client, receive };
  }
  async function sendMany(destination: string, count: number) {
    for (let i = 0; i < count; i++) {
      const res = await server.api.post(`${M}/send`, { destination, event_name: `job-${i}` });
      expect(res.status, res.text).toBe(201);
    }
  }

  it('leases at most max_concurrency messages at once; acks and rejects make room', async () => {
    const { agentId, client, receive } = await limitedAgent(2);
    await sendMany(agentId, 6);
    const first = await receive();
    expect(first).toHaveLength(2);
    expect(await receive()).toHaveLength(0);
    expect((await client.post(`${M}/acknowledge`, { message_ids: [first[0]!.message_id] })).status).toBe(200);
    const second = await receive();
    expect(second).toHaveLength(1);
    const rejected = await client.post(`${M}/reject`, { message_id: second[0]!.message_id, reason: 'later', delay_seconds: 60 });
    expect(rejected.status, rejected.text).toBe(200);
    expect(await receive()).toHaveLength(1);
    expect(await receive()).toHaveLength(0);
  });

  it('holds across concurrent receivers, and a long poll wakes when an ack makes room', async () => {
    const { agentId, client, receive } = await limitedAgent(3);
    await sendMany(agentId, 12);
    const batches = await Promise.all(Array.from({ length: 6 }, () => receive(2)));
    const leased = batches.flat();
    expect(leased).toHaveLength(3);
    // A long poll with no room waits; an acknowledgement lets it lease one.
    const polling = client.get(`${M}/receive?agent_id=${agentId}&max=5&timeout=10`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await client.post(`${M}/acknowledge`, { message_ids: [leased[0]!.message_id] })).status).toBe(200);
    const started = Date.now();
    const polled = await polling;
    expect(polled.body.data.messages).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('an expired lease makes room again', async () => {
    const { agentId, receive } = await limitedAgent(1);
    await sendMany(agentId, 2);
    expect(await receive(5, 1)).toHaveLength(1);
    expect(await receive(5, 1)).toHaveLength(0);
    const again = await waitFor(
      async () => {
        const got = await receive(5, 30);
        return got.length > 0 ? got : null;
      },
      5000,
      100,
    );
    expect(again).toHaveLength(1);
  });

  it('settles an at-most-once message as it leases it: the message takes no room afterwards', async () => {
    const { agentId, client, receive } = await limitedAgent(1);
    const once = await server.api.post(`${M}/send`, { destination: agentId, event_name: 'once', delivery_semantic: 'at_most_once' });
    expect(once.status, once.text).toBe(201);
    await sendMany(agentId, 1);
    expect((await receive()).map((m) => m.message_id)).toEqual([once.body.data.message_id]);
    expect((await client.post(`${M}/acknowledge`, { message_id: once.body.data.message_id })).status).toBe(409);
    expect(await receive()).toHaveLength(1);
  });

  it('refuses a max_concurrency below 1', async () => {
    const agentId = unique('bad');
    const client = await server.agent(agentId);
    const res = await client.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability: 'x', max_concurrency: 0 });
    expect(res.status).toBe(400);
  });
});
