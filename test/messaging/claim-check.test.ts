import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import type { Api } from '../helpers/api.js';
import { acknowledge, receive } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';
const DAY = 86_400_000;
/** Over the default inline limit (256 KiB) once JSON-encoded. */
const big = (bytes: number, seed = 'x') => ({ text: seed.repeat(bytes), n: bytes });
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

interface Ref {
  artifact_id: string;
  url: string;
  size_bytes: number;
  sha256: string;
}

describeEachDialect('messaging: large payloads by reference', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock });

  const agents = async () => ({ a: await server.agent('cc-a'), b: await server.agent('cc-b'), c: await server.agent('cc-c') });

  const receiveNow = async (agent: Api, id: string) => {
    const [message] = await receive(agent, id, 0, 1);
    expect(message).toBeDefined();
    return message as unknown as { message_id: string; payload: unknown; payload_ref?: Ref };
  };

  /** The referenced JSON text, fetched with no API key at all. */
  const fetchRef = async (ref: Ref) => {
    const res = await fetch(ref.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    return res.text();
  };

  it('sends a 300 KiB payload by reference that the receiver reads byte for byte; smaller ones stay inline', async () => {
    const { a, b } = await agents();
    const payload = big(300 * 1024, 'é');
    const sent = await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'big', payload });
    expect(sent.status, sent.text).toBe(201);
    const message = await receiveNow(b, 'cc-b');
    expect(message.payload).toBeNull();
    const ref = message.payload_ref!;
    const text = JSON.stringify(payload);
    expect(ref).toMatchObject({ size_bytes: Buffer.byteLength(text), sha256: sha256(text) });
    expect(ref.url).toContain(`/api/v1/artifacts/signed/${ref.artifact_id}/`);
    const fetched = await fetchRef(ref);
    expect(fetched).toBe(text);
    expect(sha256(fetched)).toBe(ref.sha256);
    // The receiver may read the artifact with its key too.
    expect((await b.get(`/api/v1/artifacts/${ref.artifact_id}`)).status).toBe(200);
    await acknowledge(b, message.message_id);

    const small = { text: 'y'.repeat(1000) };
    expect((await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'small', payload: small })).status).toBe(201);
    const inline = await receiveNow(b, 'cc-b');
    expect(inline.payload).toEqual(small);
    expect(inline.payload_ref).toBeUndefined();
    await acknowledge(b, inline.message_id);
  });

  it('lets no third agent read the artifact without the URL', async () => {
    const { a, b, c } = await agents();
    await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'big', payload: big(300 * 1024) });
    const message = await receiveNow(b, 'cc-b');
    const id = message.payload_ref!.artifact_id;
    expect((await c.get(`/api/v1/artifacts/${id}`)).status).toBe(403);
    expect((await c.get(`/api/v1/artifacts/${id}/download`)).status).toBe(403);
    const tampered = message.payload_ref!.url.replace(/signature=[^&]+/, 'signature=00');
    expect((await fetch(tampered)).status).toBe(403);
    await acknowledge(b, message.message_id);
  });

  it('offloads in send-batch and publish', async () => {
    const { a, b } = await agents();
    const payload = big(300 * 1024, 'b');
    const batch = await a.post(`${M}/send-batch`, {
      messages: [
        { destination: 'cc-b', event_name: 'one', payload },
        { destination: 'cc-b', event_name: 'two', payload: { small: true } },
      ],
    });
    expect(batch.status, batch.text).toBe(201);
    const first = await receiveNow(b, 'cc-b');
    expect(JSON.parse(await fetchRef(first.payload_ref!))).toEqual(payload);
    const second = await receiveNow(b, 'cc-b');
    expect(second.payload).toEqual({ small: true });
    await acknowledge(b, first.message_id);
    await acknowledge(b, second.message_id);

    expect((await b.post(`${M}/subscribe`, { agent_id: 'cc-b', topic: 'cc.big' })).status).toBeLessThan(300);
    const published = await a.post(`${M}/publish`, { topic: 'cc.big', payload });
    expect(published.status, published.text).toBe(201);
    expect(published.body.data.count).toBe(1);
    const event = await receiveNow(b, 'cc-b');
    expect(event.payload).toBeNull();
    expect(JSON.parse(await fetchRef(event.payload_ref!))).toEqual(payload);
    await acknowledge(b, event.message_id);
  });

  it('sends an artifact the sender gives by reference, and refuses references it may not give', async () => {
    const { a, b, c } = await agents();
    const content = { doc: 'z'.repeat(5000) };
    const snippet = await a.post('/api/v1/artifacts/snippets', { name: 'doc.json', content, metadata: { claim_check: true } });
    expect(snippet.status, snippet.text).toBe(201);
    const id = snippet.body.data.id as string;
    const sent = await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'ref', payload_ref: { artifact_id: id } });
    expect(sent.status, sent.text).toBe(201);
    const message = await receiveNow(b, 'cc-b');
    expect(message.payload).toBeNull();
    expect(message.payload_ref).toMatchObject({
      artifact_id: id,
      size_bytes: snippet.body.data.size_bytes,
      sha256: snippet.body.data.sha256,
    });
    expect(JSON.parse(await fetchRef(message.payload_ref!))).toEqual(content);
    await acknowledge(b, message.message_id);

    const both = await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'ref', payload: {}, payload_ref: { artifact_id: id } });
    expect(both.status).toBe(400);
    expect(both.body.error.details?.[0]?.field ?? both.text).toContain('payload_ref');
    const foreign = await c.post('/api/v1/artifacts/snippets', { name: 'c.json', content: { c: 1 } });
    const forbidden = await a.post(`${M}/send`, {
      destination: 'cc-b',
      event_name: 'ref',
      payload_ref: { artifact_id: foreign.body.data.id },
    });
    expect(forbidden.status).toBe(403);
    const unknown = await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'ref', payload_ref: { artifact_id: 'art_missing' } });
    expect(unknown.status).toBe(404);
  });

  it('keeps an acknowledgement output over the limit as an artifact the sender may read', async () => {
    const { a, b, c } = await agents();
    await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'work', payload: { n: 1 } });
    const message = await receiveNow(b, 'cc-b');
    const output = { result: 'w'.repeat(300 * 1024) };
    const acked = await b.post(`${M}/acknowledge`, { message_id: message.message_id, output });
    expect(acked.status, acked.text).toBe(200);
    const shared = (await a.get('/api/v1/artifacts/shared')).body.data as { id: string; size_bytes: number; owner: string }[];
    const artifact = shared.find((item) => item.size_bytes === JSON.stringify(output).length);
    expect(artifact?.owner).toBe('cc-b');
    const download = await a.get(`/api/v1/artifacts/${artifact!.id}/download`);
    expect(JSON.parse(download.text)).toEqual(output);
    expect((await c.get(`/api/v1/artifacts/${artifact!.id}`)).status).toBe(403);
  });

  it('deletes the offloaded artifact with its message under retention', async () => {
    const { a, b } = await agents();
    await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'big', payload: big(300 * 1024, 'r') });
    const message = await receiveNow(b, 'cc-b');
    const id = message.payload_ref!.artifact_id;
    await acknowledge(b, message.message_id);
    expect((await server.api.get(`/api/v1/artifacts/${id}`)).status).toBe(200);
    clock.advance(40 * DAY);
    while ((await server.app.retention.pass())?.more) {
      // a full batch: another pass
    }
    expect((await server.api.get(`/api/v1/artifacts/${id}`)).status).toBe(404);
  });

  it('a redriven dead letter carries the same reference; the artifact goes with the last of the two', async () => {
    const { a, b } = await agents();
    const payload = big(300 * 1024, 'd');
    await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'big', payload });
    const first = await receiveNow(b, 'cc-b');
    expect((await b.post(`${M}/reject`, { message_id: first.message_id, reason: 'no', requeue: false })).status).toBe(200);
    const redriven = await b.post(`${M}/dead-letters/${first.message_id}/redrive`, {});
    expect(redriven.status, redriven.text).toBe(201);
    expect(redriven.body.data.payload_ref.artifact_id).toBe(first.payload_ref!.artifact_id);
    const copy = await receiveNow(b, 'cc-b');
    expect(JSON.parse(await fetchRef(copy.payload_ref!))).toEqual(payload);
    await acknowledge(b, copy.message_id);
    const artifact = `/api/v1/artifacts/${first.payload_ref!.artifact_id}`;
    const retention = async (days: number) => {
      clock.advance(days * DAY);
      while ((await server.app.retention.pass())?.more) {
        // a full batch: another pass
      }
    };
    await retention(8);
    expect((await server.api.get(artifact)).status).toBe(200);
    await retention(30);
    expect((await server.api.get(artifact)).status).toBe(404);
  });

  it('takes a 20 MB payload through HTTP', async () => {
    const { a, b } = await agents();
    const payload = big(20 * 1024 * 1024, 'm');
    const sent = await a.post(`${M}/send`, { destination: 'cc-b', event_name: 'huge', payload });
    expect(sent.status, sent.text.slice(0, 200)).toBe(201);
    const message = await receiveNow(b, 'cc-b');
    const text = await fetchRef(message.payload_ref!);
    expect(text.length).toBe(JSON.stringify(payload).length);
    expect(sha256(text)).toBe(message.payload_ref!.sha256);
    await acknowledge(b, message.message_id);
  });
});
