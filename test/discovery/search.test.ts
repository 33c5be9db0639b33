import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAiEmbedder } from '../../src/discovery/index.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startFakeEmbeddings, type FakeEmbeddings } from './fake-embeddings.js';
import { namespace, register, search } from './fixtures.js';

/** A word of random letters that no other text in the test contains. */
const uniqueWord = () => Array.from({ length: 10 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('');

const names = (body: any): string[] => body.data.results.map((r: any) => r.capability.name);

describeEachDialect('discovery search', (dialect) => {
  const server = useServer(dialect);

  it('finds text.summarize first for "summarise a long report" and scores unrelated capabilities below 0.2', async () => {
    const summarize = await register(server.api, 'writer', 'text.summarize', {
      description: 'condense a long document into key points',
      tags: ['nlp'],
    });
    await register(server.api, 'painter', 'image.resize', { description: 'scale pictures to a given width and height' });
    await register(server.api, 'accountant', 'finance.invoice', { description: 'create and send invoices to customers' });
    await register(server.api, 'linguist', 'text.translate', { description: 'translate text between languages' });

    const all = await search(server.api, { query: 'summarise a long report', top_k: 10 });
    expect(all.meta.ranker).toBe('lexical');
    expect(all.data.results[0]).toEqual({
      capability: { id: summarize.id, name: 'text.summarize', agent_id: 'writer', metadata: summarize.metadata, groups: [] },
      similarity_score: expect.any(Number),
    });
    const scores = all.data.results.map((r: any) => r.similarity_score);
    expect(scores[0]).toBeGreaterThan(0.6);
    expect(scores[0]).toBeLessThanOrEqual(1);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    const unrelated = all.data.results.find((r: any) => r.capability.name === 'image.resize');
    if (unrelated) expect(unrelated.similarity_score).toBeLessThan(0.2);

    const filtered = await search(server.api, { query: 'summarise a long report', min_score: 0.2 });
    expect(names(filtered)).toContain('text.summarize');
    expect(names(filtered)).not.toContain('image.resize');
    expect(names(filtered)).not.toContain('finance.invoice');
    for (const r of filtered.data.results) expect(r.similarity_score).toBeGreaterThanOrEqual(0.2);
  });

  it('honours top_k and min_score and validates the request', async () => {
    const ns = namespace('topk');
    for (let i = 0; i < 6; i++) await register(server.api, `${ns}-${i}`, `${ns}.resize`, { description: `resize images variant ${i}` });
    const three = await search(server.api, { query: `${ns} resize images`, top_k: 3 });
    expect(three.data.results).toHaveLength(3);
    const none = await search(server.api, { query: `${ns} resize images`, min_score: 1 });
    expect(none.data.results).toEqual([]);
    const nothing = await search(server.api, { query: 'zzzqqq xyzzy', top_k: 5 });
    expect(nothing.data.results).toEqual([]);
    for (const body of [
      {},
      { query: '' },
      { query: 'x', top_k: 0 },
      { query: 'x', top_k: 101 },
      { query: 'x', min_score: 1.5 },
      { query: 'x', extra: 1 },
    ]) {
      const res = await server.api.post('/api/v1/discovery/search', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });

  it('keeps the index current as capabilities are registered, updated and deleted', async () => {
    const ns = namespace('live');
    // Query words unlike the namespace, which is part of every capability name here.
    const [word, tag, example] = [uniqueWord(), uniqueWord(), uniqueWord()];
    expect(names(await search(server.api, { query: word }))).toEqual([]);
    const cap = await register(server.api, `${ns}-a`, `${ns}.stripes`, { description: `counts ${word} stripes` });
    expect(names(await search(server.api, { query: word }))).toEqual([`${ns}.stripes`]);

    // Re-registering replaces the searchable text.
    await register(server.api, `${ns}-a`, `${ns}.stripes`, { description: 'counts spots on leopards' });
    expect(names(await search(server.api, { query: word }))).toEqual([]);
    expect(names(await search(server.api, { query: 'leopards spots' }))).toContain(`${ns}.stripes`);

    // Tags and examples are searched too.
    await register(server.api, `${ns}-b`, `${ns}.other`, { tags: [tag], examples: [`please ${example} this`] });
    expect(names(await search(server.api, { query: tag }))).toEqual([`${ns}.other`]);
    expect(names(await search(server.api, { query: example }))).toEqual([`${ns}.other`]);

    expect((await server.api.delete(`/api/v1/discovery/capabilities/${cap.id}`)).status).toBe(200);
    expect(names(await search(server.api, { query: 'leopards spots' }))).not.toContain(`${ns}.stripes`);
    expect((await server.api.delete(`/api/v1/discovery/agents/${ns}-b`)).status).toBe(200);
    expect(names(await search(server.api, { query: tag }))).toEqual([]);
  });

  it('stays current on a second node sharing the database, and rebuilds its index on start', async () => {
    const ns = namespace('node');
    await register(server.api, `${ns}-a`, `${ns}.before`, { description: `${ns}alpha before the second node started` });
    const other: TestServer = await startServer(dialect, { database: server.database, adminKey: server.adminKey });
    try {
      expect(names(await search(other.api, { query: `${ns}alpha` }))).toEqual([`${ns}.before`]);
      // Changes on one node are visible to the next search on the other, notification or not.
      await register(server.api, `${ns}-b`, `${ns}.after`, { description: `${ns}beta registered on node one` });
      expect(names(await search(other.api, { query: `${ns}beta` }))).toEqual([`${ns}.after`]);
      await register(other.api, `${ns}-c`, `${ns}.third`, { description: `${ns}gamma registered on node two` });
      expect(names(await search(server.api, { query: `${ns}gamma` }))).toEqual([`${ns}.third`]);
      await server.api.delete(`/api/v1/discovery/agents/${ns}-b`);
      expect(names(await search(other.api, { query: `${ns}beta` }))).toEqual([]);
    } finally {
      await other.close();
    }
  });

  describe('with an embeddings endpoint', () => {
    let fake: FakeEmbeddings;
    let semantic: TestServer;
    beforeAll(async () => {
      fake = await startFakeEmbeddings();
      semantic = await startServer(dialect, {
        env: {
          SWITCHBOARD_LLM_URL: fake.url,
          SWITCHBOARD_EMBEDDINGS_MODEL: 'fake-embed-1',
          SWITCHBOARD_LLM_API_KEY: 'sk-fake-secret',
        },
      });
      await register(semantic.api, 'vision', 'vision.pet-detect', { description: 'spot cats in photos' });
      await register(semantic.api, 'books', 'finance.invoice', { description: 'create invoices for customers' });
      await register(semantic.api, 'writer', 'text.summarize', { description: 'condense a long document into key points' });
    });
    afterAll(async () => {
      await semantic?.close();
      await fake?.close();
    });

    it('blends cosine similarity in, finding capabilities that share no word with the query', async () => {
      fake.mode = 'ok';
      // No capability mentions felines: lexically nothing matches.
      const result = await search(semantic.api, { query: 'felines', top_k: 3 });
      expect(result.meta.ranker).toBe('lexical+embeddings');
      expect(names(result)[0]).toBe('vision.pet-detect');
      expect(result.data.results[0].similarity_score).toBeGreaterThan(0.3);
      // Lexical and semantic agreement ranks above either alone.
      const both = await search(semantic.api, { query: 'summary of a long document' });
      expect(names(both)[0]).toBe('text.summarize');
      expect(both.data.results[0].similarity_score).toBeGreaterThan(0.7);

      const calls = fake.requests;
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) {
        expect(call.model).toBe('fake-embed-1');
        expect(call.authorization).toBe('Bearer sk-fake-secret');
      }
      const embedded = calls.flatMap((c) => c.input as string[]);
      expect(embedded).toContain('felines');
      expect(embedded.some((text) => text.includes('spot cats in photos'))).toBe(true);
    });

    it('falls back to lexical scores when the endpoint fails', async () => {
      fake.mode = 'error';
      try {
        const lexical = await search(semantic.api, { query: 'condense this document quickly' });
        expect(lexical.meta.ranker).toBe('lexical');
        expect(names(lexical)[0]).toBe('text.summarize');
        expect(names(await search(semantic.api, { query: 'kittens' }))).toEqual([]);
      } finally {
        fake.mode = 'ok';
      }
      // And blends again once it recovers.
      const recovered = await waitFor(async () => {
        const body = await search(semantic.api, { query: 'kittens' });
        return body.meta.ranker === 'lexical+embeddings' && body;
      });
      expect(names(recovered)[0]).toBe('vision.pet-detect');
    });
  });
});

describe('OpenAiEmbedder', () => {
  let fake: FakeEmbeddings;
  beforeAll(async () => {
    fake = await startFakeEmbeddings();
  });
  afterAll(async () => {
    await fake.close();
  });

  it('posts to {base}/v1/embeddings (with or without /v1 in the base) and returns vectors in input order', async () => {
    for (const url of [fake.url, `${fake.url}/v1`, `${fake.url}/v1/`]) {
      const embedder = new OpenAiEmbedder({ url, model: 'm' });
      const vectors = await embedder.embed(['cat', 'invoice']);
      expect(vectors).toHaveLength(2);
      expect(vectors[0]![0]).toBe(1);
      expect(vectors[1]![2]).toBe(1);
    }
    expect(fake.requests.at(-1)!.authorization).toBeUndefined();
  });

  it('gives up after its timeout and reports endpoint errors', async () => {
    const embedder = new OpenAiEmbedder({ url: fake.url, model: 'm', timeoutMs: 200 });
    fake.mode = 'hang';
    const started = Date.now();
    await expect(embedder.embed(['cat'])).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3000);
    fake.mode = 'error';
    await expect(embedder.embed(['cat'])).rejects.toThrow(/500/);
    fake.mode = 'ok';
  });
});
