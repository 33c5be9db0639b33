import { expect, it } from 'vitest';
import { createAgent, hydrate, PayloadRefMismatchError, Switchboard, type Message } from '../../src/client/index.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const M = '/api/v1/messaging';

describeEachDialect('the SDK and large payloads', (dialect) => {
  const server = useServer(dialect);
  const clientOf = async (agentId: string, options: { inlinePayloadBytes?: number } = {}) =>
    new Switchboard({ url: server.url, apiKey: (await server.agent(agentId)).key!, ...options });

  it('send uploads a payload over the limit and sends payload_ref; hydrate fetches and checks it', async () => {
    const sender = await clientOf('sdk-cc-a');
    const receiver = await clientOf('sdk-cc-b');
    const payload = { doc: 'ü'.repeat(200 * 1024), n: 1 };
    await sender.messaging.send({ body: { destination: 'sdk-cc-b', event_name: 'doc', payload } });
    await sender.messaging.send({ body: { destination: 'sdk-cc-b', event_name: 'small', payload: { n: 2 } } });
    const { messages } = await receiver.messaging.receive({ query: { max: 2 } });
    expect(messages).toHaveLength(2);
    const [big, small] = messages as [Message, Message];
    expect(big.payload).toBeNull();
    expect(big.payload_ref?.size_bytes).toBe(new TextEncoder().encode(JSON.stringify(payload)).length);
    // The artifact is the sender's, marked so retention deletes it with the message.
    const artifact = await sender.artifacts.get({ path: { artifact_id: big.payload_ref!.artifact_id } });
    expect(artifact).toMatchObject({ owner: 'sdk-cc-a', metadata: { claim_check: true }, content_type: 'application/json' });
    expect((await hydrate(big)).payload).toEqual(payload);
    expect(await hydrate(small)).toBe(small);
    await expect(hydrate({ ...big, payload_ref: { ...big.payload_ref!, sha256: '0'.repeat(64) } })).rejects.toThrow(
      PayloadRefMismatchError,
    );

    // Infinity: inline, and the server offloads it itself.
    const inline = await clientOf('sdk-cc-c', { inlinePayloadBytes: Infinity });
    await inline.messaging.send({ body: { destination: 'sdk-cc-b', event_name: 'doc', payload } });
    const [serverSide] = (await receiver.messaging.receive()).messages;
    expect(serverSide!.payload_ref).toBeDefined();
    expect((await receiver.artifacts.get({ path: { artifact_id: serverSide!.payload_ref!.artifact_id } })).owner).toBe('sdk-cc-c');
    expect((await hydrate(serverSide!)).payload).toEqual(payload);
  });

  it('hydrate refuses bytes that differ from the reference: other bytes of its size, more bytes, fewer', async () => {
    const sender = await clientOf('sdk-cc-d');
    const receiver = await clientOf('sdk-cc-e');
    const payloadOf = (letter: string) => ({ doc: letter.repeat(300 * 1024) });
    for (const letter of ['a', 'b']) {
      await sender.messaging.send({ body: { destination: 'sdk-cc-e', event_name: letter, payload: payloadOf(letter) } });
    }
    const { messages } = await receiver.messaging.receive({ query: { max: 2 } });
    const [a, b] = ['a', 'b'].map((letter) => messages.find((m) => m.event_name === letter)!);
    const ref = a!.payload_ref!;
    expect(b!.payload_ref!.size_bytes).toBe(ref.size_bytes);
    // b's bytes under a's reference: what a download corrupted on the way would give.
    await expect(hydrate({ ...a!, payload_ref: { ...ref, url: b!.payload_ref!.url } })).rejects.toThrow(
      new PayloadRefMismatchError(`payload reference ${ref.artifact_id}: sha256 mismatch`),
    );
    // Refused as soon as the bytes run over the size (not once they are all read).
    await expect(hydrate({ ...a!, payload_ref: { ...ref, size_bytes: ref.size_bytes - 1 } })).rejects.toThrow(
      new PayloadRefMismatchError(`payload reference ${ref.artifact_id}: more than the ${ref.size_bytes - 1} bytes expected`),
    );
    await expect(hydrate({ ...a!, payload_ref: { ...ref, size_bytes: ref.size_bytes + 1 } })).rejects.toThrow(
      new PayloadRefMismatchError(`payload reference ${ref.artifact_id}: ${ref.size_bytes} bytes, expected ${ref.size_bytes + 1}`),
    );
    expect((await hydrate(a!)).payload).toEqual(payloadOf('a'));
    expect((await hydrate(b!)).payload).toEqual(payloadOf('b'));
  });

  for (const transport of ['poll', 'channel'] as const) {
    it(`the agent worker's handler gets a payload and a step input that came by reference (${transport})`, async () => {
      const worker = `sdk-cc-${transport}`;
      const agentClient = await clientOf(worker);
      const seen: unknown[] = [];
      const agent = createAgent({ client: agentClient, agentId: worker, transport, pollTimeoutSeconds: 1, heartbeatIntervalMs: 0 });
      agent.on('doc', (message) => {
        seen.push(message.payload);
        return {};
      });
      agent.on('plan.step.execute', (message) => {
        const input = (message.payload as { input: { doc: string } }).input;
        return { length: input.doc.length };
      });
      await agent.start();
      try {
        const doc = 'd'.repeat(300 * 1024);
        const sent = await server.api.post(`${M}/send`, { destination: worker, event_name: 'doc', payload: { doc } });
        expect(sent.status, sent.text).toBe(201);
        await waitFor(async () => seen.length > 0 || undefined, 10_000);
        expect(seen).toEqual([{ doc }]);

        const plan = await server.api.post('/api/v1/coordination/plans', {
          alias: `sdk-cc-plan-${transport}`,
          steps: [{ id: 'read', type: 'agent', agent: worker, input: { doc: '{{input.doc}}' } }],
        });
        const run = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: { doc } });
        const done = await waitFor(async () => {
          const current = (await server.api.get(`/api/v1/coordination/runs/${run.body.data.id}`)).body.data;
          return current.status === 'completed' ? current : undefined;
        }, 15_000);
        expect(done.steps[0].input_ref).toBeDefined();
        expect(done.steps[0].output).toEqual({ length: doc.length });
      } finally {
        await agent.stop();
      }
    }, 30_000);
  }
});
