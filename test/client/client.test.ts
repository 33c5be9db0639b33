import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Switchboard, SwitchboardError } from '../../src/client/index.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

describeEachDialect('SDK client', (dialect) => {
  const server = useServer(dialect);
  const admin = () => new Switchboard({ url: server.url, apiKey: server.adminKey });

  it('authenticates with an API key and with Ed25519 signatures (JSON and streamed bodies)', async () => {
    const key = await admin().auth.createKey({ body: { agent_id: 'sdk-bearer', role: 'agent', name: 'sdk' } });
    expect((await new Switchboard({ url: server.url, apiKey: key.key }).auth.whoami()).agent_id).toBe('sdk-bearer');

    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
    await admin().auth.addPublicKey({ path: { agent_id: 'sdk-signer' }, body: { public_key: raw } });
    const signer = new Switchboard({ url: server.url, agentId: 'sdk-signer', privateKey });
    expect((await signer.auth.whoami()).agent_id).toBe('sdk-signer');
    const sent = await signer.messaging.send({ body: { destination: 'sdk-bearer', event_name: 'hello', payload: { n: 1 } } });
    expect(sent.status).toBe('sent');
    const { messages } = await signer.messaging.receive({ query: { agent_id: 'sdk-signer', timeout: 0 } });
    expect(messages).toEqual([]);

    for (const client of [admin(), signer]) {
      const form = new FormData();
      form.set('file', new Blob(['hello, artifacts']), 'hello.txt');
      const artifact = await client.artifacts.upload({ body: form });
      const download: Response = await client.artifacts.download({ path: { artifact_id: artifact.id } });
      expect(await download.text()).toBe('hello, artifacts');
    }
  });

  it('throws SwitchboardError with the envelope fields', async () => {
    const error = await admin()
      .tasks.get({ path: { id: 'task_missing' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchboardError);
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
    expect((error as SwitchboardError).requestId).toBeTruthy();
  });

  it('iterates every page of a list', async () => {
    const client = admin();
    const names = ['p1', 'p2', 'p3', 'p4', 'p5'].map((n) => `${n}-${dialect}`);
    for (const name of names) await client.projects.create({ body: { name } });
    const seen: string[] = [];
    for await (const project of client.projects.list.all({ query: { limit: 2 } })) seen.push(project.name);
    expect(seen.filter((n) => names.includes(n)).sort()).toEqual(names);
  });
});

// A stand-in server answers with the statuses under test; the backend plays no part.
describe('SDK client retries', () => {
  it('retries 429 after Retry-After (any method) and 5xx only for idempotent methods', async () => {
    const statuses = [429, 503, 200];
    const seen: string[] = [];
    const fake = createServer((req, res) => {
      seen.push(req.method!);
      const status = statuses.shift() ?? 500;
      res.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '1' } : {}) });
      res.end(JSON.stringify(status === 200 ? { data: { ok: true }, meta: {} } : { error: { code: 'busy', message: 'busy' }, meta: { request_id: 'r1' } }));
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const client = new Switchboard({ url: `http://127.0.0.1:${(fake.address() as AddressInfo).port}`, apiKey: 'sk_fake' });
      const started = Date.now();
      expect(await client.auth.whoami()).toEqual({ ok: true });
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      statuses.push(429, 503);
      const error = await client.messaging.send({ body: { destination: 'a', event_name: 'e' } }).catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 503, code: 'busy', requestId: 'r1' });
      expect(seen).toEqual(['GET', 'GET', 'GET', 'POST', 'POST']);
    } finally {
      fake.close();
    }
  });
});
