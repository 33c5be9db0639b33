import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import type { Api } from '../helpers/api.js';
import { acknowledge, receive } from '../helpers/agent.js';
import { waitFor } from '../helpers/wait.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { keyPair, signedHeaders } from '../helpers/signing.js';

const M = '/api/v1/messaging';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

interface Ref {
  artifact_id: string;
  url: string;
  size_bytes: number;
  sha256: string;
}

/**
 * A payload's JSON text as a client may write it: spaces and new lines, escapes (a surrogate
 * pair among them), raw multi-byte characters and numbers JSON.stringify writes otherwise.
 */
function looseJson(rows: number): string {
  const row = (i: number) =>
    `{ "i" : ${i}.0, "e": 1e2, "z": -0, "esc": "\\u00e9\\ud83d\\ude00\\n\\"q\\" \\/", "raw": "${'é😀'.repeat(40)}${'x'.repeat(300)}",\n  "list": [ true , false, null, [ ] , { } ] }`;
  return `{\n "rows" : [\n${Array.from({ length: rows }, (_, i) => row(i)).join(' ,\n')} ] }`;
}

describeEachDialect('messaging: large payloads streamed from the request body', (dialect) => {
  const server = useServer(dialect);

  const agents = async () => ({ a: await server.agent('sp-a'), b: await server.agent('sp-b') });

  const postRaw = (api: Api, route: string, body: string) =>
    api.request('POST', `${M}/${route}`, { raw: true, body, headers: { 'content-type': 'application/json' } });

  const fetchRef = async (ref: Ref) => {
    const res = await fetch(ref.url);
    expect(res.status).toBe(200);
    return res.text();
  };

  /**
   * A plan started by an event trigger on `topic` whose filter must pass, its input `{n}` from
   * the event; resolves with the completed run of it once one is.
   */
  const triggeredRun = async (topic: string, filter: string) => {
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `sp-${topic.replaceAll('.', '-')}`,
      steps: [{ id: 'echo', type: 'transform', output: { n: '{{input.n}}' } }],
    });
    expect(plan.status, plan.text).toBe(201);
    const trigger = await server.api.post('/api/v1/coordination/triggers', {
      plan_id: plan.body.data.id,
      type: 'event',
      config: { topic, filter },
      input_mapping: { n: '{{event.n}}' },
    });
    expect(trigger.status, trigger.text).toBe(201);
    return () =>
      waitFor(async () => {
        const runs = (await server.api.get(`/api/v1/coordination/runs?plan_id=${plan.body.data.id}`)).body.data as any[];
        return runs.find((r) => r.status === 'completed');
      }, 10_000);
  };

  const artifactCount = async (api: Api) => (await api.get('/api/v1/artifacts')).body.meta.total as number;

  /** Staging files left on disk (SQLite's blob store; PostgreSQL stages chunks in the database). */
  const stagingFiles = () => {
    const dir = path.join(server.database.dataDir, 'blobs', 'tmp');
    return fs.existsSync(dir) ? fs.readdirSync(dir).length : 0;
  };

  it('stores a 20 MB payload sent as loose JSON text as JSON.stringify writes it, byte for byte', async () => {
    const { a, b } = await agents();
    const text = looseJson(34_000);
    expect(Buffer.byteLength(text)).toBeGreaterThan(20 * 1024 ** 2);
    const sent = await postRaw(a, 'send', `{ "destination": "sp-b", "payload": ${text}, "event_name": "loose" }`);
    expect(sent.status, sent.text.slice(0, 300)).toBe(201);
    const [message] = await receive(b, 'sp-b', 0, 1);
    const ref = (message as unknown as { payload: unknown; payload_ref: Ref }).payload_ref;
    expect(message!.payload).toBeNull();
    const expected = JSON.stringify(JSON.parse(text));
    expect(ref).toMatchObject({ size_bytes: Buffer.byteLength(expected), sha256: sha256(expected) });
    const fetched = await fetchRef(ref);
    expect(fetched === expected).toBe(true);
    await acknowledge(b, message!.message_id);
  });

  it('streams each large payload of a batch to its own reference and keeps the small ones inline', async () => {
    const { a, b } = await agents();
    const large = (seed: number) => `{"seed": ${seed}, "text": "${'ü'.repeat(200_000)}"}`;
    const body = `{"messages": [
      {"destination": "sp-b", "event_name": "one", "payload": ${large(1)}},
      {"destination": "sp-b", "event_name": "two", "payload": {"small": [1, 2.50, "é"]}},
      {"destination": "sp-b", "event_name": "three", "payload": ${large(3)}}
    ]}`;
    const sent = await postRaw(a, 'send-batch', body);
    expect(sent.status, sent.text.slice(0, 300)).toBe(201);
    const messages = (await receive(b, 'sp-b', 0, 3)) as unknown as {
      event_name: string;
      payload: unknown;
      payload_ref?: Ref;
      message_id: string;
    }[];
    const byName = new Map(messages.map((m) => [m.event_name, m]));
    expect(byName.get('two')).toMatchObject({ payload: { small: [1, 2.5, 'é'] } });
    expect(byName.get('two')!.payload_ref).toBeUndefined();
    for (const [name, seed] of [
      ['one', 1],
      ['three', 3],
    ] as const) {
      const ref = byName.get(name)!.payload_ref!;
      expect(await fetchRef(ref)).toBe(JSON.stringify(JSON.parse(large(seed))));
    }
    for (const m of messages) await acknowledge(b, m.message_id);
  });

  it('publishes a streamed payload as one artifact every subscriber reads, and hands its value to the trigger it concerns', async () => {
    const { a, b } = await agents();
    const c = await server.agent('sp-c');
    const topic = `sp.big.${dialect}`;
    for (const [agent, id] of [
      [b, 'sp-b'],
      [c, 'sp-c'],
    ] as const)
      expect((await agent.post(`${M}/subscribe`, { agent_id: id, topic })).status).toBe(201);
    const completed = await triggeredRun(topic, 'event.n = 7 and $length(event.text) = 200000');
    const text = `{ "n": 7, "text": "${'ü'.repeat(200_000)}" }`;
    const published = await postRaw(a, 'publish', `{"topic": "${topic}", "payload": ${text}}`);
    expect(published.status, published.text.slice(0, 300)).toBe(201);
    expect(published.body.data.count).toBe(2);
    const refs: Ref[] = [];
    for (const [agent, id] of [
      [b, 'sp-b'],
      [c, 'sp-c'],
    ] as const) {
      const [message] = await receive(agent, id, 0, 1);
      expect(message!.payload).toBeNull();
      refs.push((message as unknown as { payload_ref: Ref }).payload_ref);
      await acknowledge(agent, message!.message_id);
    }
    expect(refs[1]!.artifact_id).toBe(refs[0]!.artifact_id);
    expect(await fetchRef(refs[1]!)).toBe(JSON.stringify(JSON.parse(text)));
    expect((await completed()).input).toEqual({ n: 7 });
  });

  it('keeps no artifact of a streamed publish nobody subscribes to, after a trigger read its value', async () => {
    const { a } = await agents();
    const topic = `sp.nobody.${dialect}`;
    const completed = await triggeredRun(topic, '$length(event.text) = 400000');
    const before = await artifactCount(server.api);
    const published = await postRaw(a, 'publish', `{"topic": "${topic}", "payload": {"n": 3, "text": "${'n'.repeat(400_000)}"}}`);
    expect(published.status, published.text.slice(0, 300)).toBe(201);
    expect(published.body.data.count).toBe(0);
    expect((await completed()).input).toEqual({ n: 3 });
    expect(await artifactCount(server.api)).toBe(before);
    await expect.poll(stagingFiles).toBe(0);
  });

  it('stores a streamed acknowledgement output as JSON.stringify writes it, for the sender to read', async () => {
    const { a, b } = await agents();
    expect((await a.post(`${M}/send`, { destination: 'sp-b', event_name: 'work', payload: {} })).status).toBe(201);
    const [message] = await receive(b, 'sp-b', 0, 1);
    const text = looseJson(600);
    const expected = JSON.stringify(JSON.parse(text));
    expect(Buffer.byteLength(expected)).toBeGreaterThan(256 * 1024);
    const acked = await postRaw(b, 'acknowledge', `{ "output" : ${text}, "message_id": "${message!.message_id}" }`);
    expect(acked.status, acked.text.slice(0, 300)).toBe(200);
    const shared = (await a.get('/api/v1/artifacts/shared?limit=100')).body.data as { id: string; sha256: string; owner: string }[];
    const artifact = shared.find((item) => item.sha256 === sha256(expected));
    expect(artifact?.owner).toBe('sp-b');
    const download = await a.get(`/api/v1/artifacts/${artifact!.id}/download`);
    expect(download.text === expected).toBe(true);

    // Refused after its output went to storage: nothing of it is kept.
    const before = await artifactCount(server.api);
    const again = await postRaw(b, 'acknowledge', `{"message_id": "${message!.message_id}", "output": ${looseJson(601)}}`);
    expect(again.status, again.text.slice(0, 300)).toBe(409);
    const unknown = await postRaw(b, 'acknowledge', `{"message_id": "msg_unknown", "output": ${looseJson(602)}}`);
    expect(unknown.status, unknown.text.slice(0, 300)).toBe(404);
    expect(await artifactCount(server.api)).toBe(before);
  });

  it('keeps inline a payload whose body is over the limit only by its spacing', async () => {
    const { a, b } = await agents();
    const payload = { words: Array.from({ length: 2000 }, (_, i) => `w${i}`) };
    const spaced = `{"words": [${payload.words.map((w) => JSON.stringify(w)).join(`,${' '.repeat(200)}`)}]}`;
    expect(Buffer.byteLength(spaced)).toBeGreaterThan(256 * 1024);
    const sent = await postRaw(a, 'send', `{"destination": "sp-b", "event_name": "spaced", "payload": ${spaced}}`);
    expect(sent.status, sent.text.slice(0, 300)).toBe(201);
    const [message] = await receive(b, 'sp-b', 0, 1);
    expect(message!.payload).toEqual(payload);
    expect((message as unknown as { payload_ref?: Ref }).payload_ref).toBeUndefined();
    await acknowledge(b, message!.message_id);
  });

  it('answers 400 to large malformed or invalid bodies and keeps nothing of them', async () => {
    const { a } = await agents();
    const before = await artifactCount(a);
    const payload = `{"text": "${'y'.repeat(2 * 1024 ** 2)}"}`;
    const bodies: [string, string, string][] = [
      ['send', 'cut short', `{"destination": "sp-b", "event_name": "x", "payload": ${payload.slice(0, -10)}`],
      [
        'send',
        'nesting too deep',
        `{"destination": "sp-b", "event_name": "x", "payload": [${payload}, ${'['.repeat(70)}${']'.repeat(70)}]}`,
      ],
      ['send', 'garbage after', `{"destination": "sp-b", "event_name": "x", "payload": ${payload}} trailing`],
      ['send', 'a bad escape', `{"destination": "sp-b", "event_name": "x", "payload": ${payload.slice(0, -2)}\\q"}}`],
      ['send', 'a field of the wrong type', `{"destination": 5, "event_name": "x", "payload": ${payload}}`],
      ['send', 'an unknown field', `{"destination": "sp-b", "event_name": "x", "payload": ${payload}, "nope": 1}`],
      ['send', 'payload twice', `{"destination": "sp-b", "event_name": "x", "payload": ${payload}, "payload": 1}`],
      [
        'send',
        'payload and payload_ref',
        `{"destination": "sp-b", "event_name": "x", "payload": ${payload}, "payload_ref": {"artifact_id": "art_x"}}`,
      ],
      ['publish', 'cut short', `{"topic": "sp.bad", "payload": ${payload.slice(0, -10)}`],
      ['publish', 'an unknown field', `{"topic": "sp.bad", "payload": ${payload}, "nope": 1}`],
      ['publish', 'payload twice', `{"topic": "sp.bad", "payload": ${payload}, "payload": 1}`],
      ['acknowledge', 'cut short', `{"message_id": "msg_x", "output": ${payload.slice(0, -10)}`],
      ['acknowledge', 'garbage after', `{"message_id": "msg_x", "output": ${payload}} trailing`],
      ['acknowledge', 'an output with message_ids', `{"message_ids": ["msg_x"], "output": ${payload}}`],
      ['acknowledge', 'output twice', `{"message_id": "msg_x", "output": ${payload}, "output": 1}`],
      [
        'send-batch',
        'one bad message',
        `{"messages": [{"destination": "sp-b", "event_name": "x", "payload": ${payload}}, {"destination": "sp-b"}]}`,
      ],
    ];
    for (const [route, what, body] of bodies) {
      const res = await postRaw(a, route, body);
      expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBe(400);
      expect(res.body.error.code, what).toBe('invalid_request');
    }
    expect(await artifactCount(a)).toBe(before);
    // The staged bytes go once the answer is sent.
    await expect.poll(stagingFiles).toBe(0);
  });

  it('verifies a signed request over the whole streamed body', async () => {
    const { b } = await agents();
    const signer = keyPair();
    expect((await server.api.post('/api/v1/auth/agents/sp-signer/public-keys', { public_key: signer.raw })).status).toBe(201);
    const body = `{"destination": "sp-b", "event_name": "signed", "payload": {"text": "${'s'.repeat(400_000)}"}}`;
    const send = (signedBody: string) =>
      fetch(`${server.url}${M}/send`, {
        method: 'POST',
        headers: { ...signedHeaders(signer.privateKey, 'sp-signer', 'POST', `${M}/send`, signedBody), 'content-type': 'application/json' },
        body,
      });
    expect((await send(body.replace('sp-b', 'sp-c'))).status).toBe(401);
    const sent = await send(body);
    expect(sent.status, await sent.clone().text()).toBe(201);
    const [message] = await receive(b, 'sp-b', 0, 1);
    expect(await fetchRef((message as unknown as { payload_ref: Ref }).payload_ref)).toBe(JSON.stringify(JSON.parse(body).payload));
    await acknowledge(b, message!.message_id);
  });
});
