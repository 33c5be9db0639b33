import fc from 'fast-check';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { METADATA_FILTER_LIMITS } from '../../src/artifacts/schemas.js';
import { useServer } from '../helpers/server.js';
import { sendForm } from './fixtures.js';

/** PostgreSQL's jsonb containment (`doc @> want`) below the top level, as documented. */
function contains(doc: unknown, want: unknown): boolean {
  if (Array.isArray(want)) return Array.isArray(doc) && want.every((w) => doc.some((d) => contains(d, w)));
  if (want !== null && typeof want === 'object') {
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return false;
    return Object.entries(want).every(([k, v]) => Object.hasOwn(doc, k) && contains((doc as Record<string, unknown>)[k], v));
  }
  return doc === want;
}

// A small vocabulary, so random filters often hit; keys with dots and quotes, which JSON paths would mangle.
const key = fc.constantFrom('a', 'b', 'c', 'x.y', 'k "q"', 'ü');
// Integers and exactly representable fractions: both databases compare them by value.
const scalar = fc.oneof(fc.constantFrom(null, true, false, 0.5, -3.75, 'a', 'b', '', 'ünï', '1'), fc.integer({ min: -3, max: 3 }));
// At most 4 levels with the top object: a filter may nest 5 (METADATA_FILTER_LIMITS).
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', maxDepth: 3 }, scalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 3 }),
  object: fc.dictionary(key, tie('value'), { maxKeys: 3 }),
}));
const metadata = fc.dictionary(key, value, { maxKeys: 4 });

/** The keys and elements of a JSON value, at every level. */
function valueCount(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Object.values(value);
  return children.length + children.reduce((sum: number, child) => sum + valueCount(child), 0);
}

/** A part of `doc` (so the filter matches at least it), chosen by a seed. */
function prune(doc: unknown, seed: number): unknown {
  let state = seed >>> 0;
  const coin = () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state % 3 !== 0;
  };
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.filter(coin).map(walk);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(
        Object.entries(v)
          .filter(coin)
          .map(([k, x]) => [k, walk(x)]),
      );
    return v;
  };
  return walk(doc);
}

describeEachDialect('Artifacts: metadata filter', (dialect) => {
  const server = useServer(dialect);

  it('lists exactly the artifacts whose metadata contains the filter (jsonb @> semantics)', async () => {
    const agent = await server.agent('meta-prop');
    const docs = fc.sample(metadata, 40);
    const ids: string[] = [];
    for (const [i, doc] of docs.entries()) {
      const res = await agent.post('/api/v1/artifacts/snippets', { name: `m${i}`, content: i, metadata: doc });
      expect(res.status).toBe(201);
      ids.push(res.body.data.id);
    }
    const filter = fc.oneof(
      metadata,
      fc.tuple(fc.nat(docs.length - 1), fc.integer()).map(([i, seed]) => prune(docs[i], seed) as Record<string, unknown>),
    );
    // A window of the matches, to check the page and the total as well as the set.
    const window = fc.oneof(
      fc.constant({ limit: 500, offset: 0 }),
      fc.record({ limit: fc.integer({ min: 1, max: 5 }), offset: fc.nat(8) }),
    );
    await fc.assert(
      fc.asyncProperty(filter, window, async (wanted, { limit, offset }) => {
        // A filter holds at most 64 keys and elements in all (the bounds' own test is below).
        fc.pre(valueCount(wanted) <= METADATA_FILTER_LIMITS.values);
        const res = await agent.get(
          `/api/v1/artifacts?limit=${limit}&offset=${offset}&metadata=${encodeURIComponent(JSON.stringify(wanted))}`,
        );
        expect(res.status).toBe(200);
        const expected = ids.filter((_, i) => contains(docs[i], wanted));
        const context = JSON.stringify({ wanted, limit, offset, docs });
        expect(
          res.body.data.map((a: { id: string }) => a.id),
          context,
        ).toEqual(expected.slice(offset, offset + limit));
        expect(res.body.meta.total, context).toBe(expected.length);
      }),
      { numRuns: 150 },
    );
  });
});

describeEachDialect('Artifacts: metadata filter over metadata stored with a NUL', (dialect) => {
  const server = useServer(dialect);

  // Before NUL was refused at validation, metadata with one was stored (JSON text, the NUL
  // escaped), and every filter then failed on PostgreSQL, whose jsonb cannot hold a NUL.
  it('answers every filter, and refuses a filter with a NUL (400)', async () => {
    const agent = await server.agent('nul-meta');
    const create = async (name: string, metadata: Record<string, unknown>) =>
      (await agent.post('/api/v1/artifacts/snippets', { name, content: name, metadata })).body.data.id as string;
    const plain = await create('plain', { k: 1, note: 'plain', lit: '\\u0000' });
    const old = await create('old', { k: 1 });
    const other = await create('other', { k: 2 });
    const stored = { k: 1, note: 'a\u0000b', lit: '\\u0000', nested: ['\u0000', { deeper: 'x\u0000' }] };
    await server.app.platform.database.db
      .updateTable('artifacts')
      .set({ metadata: JSON.stringify(stored) })
      .where('id', '=', old)
      .execute();

    const ids = async (filter: unknown) => {
      const res = await agent.get(`/api/v1/artifacts?limit=500&metadata=${encodeURIComponent(JSON.stringify(filter))}`);
      expect(res.status, res.text).toBe(200);
      return res.body.data.map((a: { id: string }) => a.id);
    };
    expect(await ids({})).toEqual([plain, old, other]);
    expect(await ids({ k: 1 })).toEqual([plain, old]);
    // A backslash followed by "u0000" is text, not a NUL: it still matches exactly.
    expect(await ids({ lit: '\\u0000' })).toEqual([plain, old]);
    expect(await ids({ note: 'plain' })).toEqual([plain]);
    expect(await ids({ nested: [{}] })).toEqual([old]);
    expect(await ids({ k: 2 })).toEqual([other]);
    expect((await agent.get(`/api/v1/artifacts/${old}`)).body.data.metadata).toEqual(stored);

    for (const filter of [{ note: 'a\u0000b' }, { ['k\u0000']: 1 }, { nested: ['\u0000'] }]) {
      const res = await agent.get(`/api/v1/artifacts?metadata=${encodeURIComponent(JSON.stringify(filter))}`);
      expect(res.status).toBe(400);
      // The refusal names the field of the JSON text that holds the NUL (metadata.note, …).
      expect(res.body.error.details).toEqual([{ field: expect.stringMatching(/^metadata/), message: expect.stringMatching(/NUL/) }]);
    }
    // Nor is such metadata stored any more, from a form's text either.
    const form = await sendForm(agent, { bytes: 'x', metadata: '{"note":"a\\u0000b"}' });
    expect(form.status).toBe(400);
    expect(form.body.error.details).toEqual([{ field: 'metadata.note', message: expect.stringMatching(/NUL/) }]);
  });
});

describeEachDialect('Artifacts: metadata filter bounds', (dialect) => {
  const server = useServer(dialect);

  const nested = (levels: number): Record<string, unknown> => {
    let value: Record<string, unknown> = { leaf: 1 };
    for (let i = 1; i < levels; i++) value = { n: value };
    return value;
  };
  const elements = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);

  // Unbounded, such filters held SQLite's connection for seconds (the server with it) or broke
  // the statement with a 500; each is now a 400 naming where the filter goes too far.
  it('refuses a filter past its size, depth, key, element or value bounds with a 400 naming the field', async () => {
    const agent = await server.agent('meta-bounds');
    for (let i = 0; i < 5; i++) {
      await agent.post('/api/v1/artifacts/snippets', { name: `b${i}`, content: i, metadata: { tags: elements(300), n: nested(4) } });
    }
    const refused: [unknown, string, RegExp][] = [
      [{ tags: elements(300) }, 'metadata.tags', /300 elements; .* at most 20/],
      [{ tags: elements(21) }, 'metadata.tags', /at most 20/],
      [nested(40), 'metadata.n.n.n.n.n', /deeper than 5 levels/],
      [nested(6), 'metadata.n.n.n.n.n', /deeper than 5 levels/],
      [{ n: [[[[[1]]]]] }, 'metadata.n.0.0.0.0', /deeper than 5 levels/],
      [Object.fromEntries(elements(21).map((k) => [k, 1])), 'metadata', /21 keys; .* at most 20/],
      [Object.fromEntries(elements(4).map((k) => [k, elements(20)])), 'metadata', /more than 64 keys and elements/],
      [{ text: 'x'.repeat(4100) }, 'metadata', /4096/],
    ];
    for (const [filter, field, message] of refused) {
      const res = await agent.get(`/api/v1/artifacts?metadata=${encodeURIComponent(JSON.stringify(filter))}`);
      expect(res.status, `${field}: ${res.text}`).toBe(400);
      expect(res.body.error.details, res.text).toEqual([expect.objectContaining({ field, message: expect.stringMatching(message) })]);
    }
  });

  it('answers a filter at its bounds', async () => {
    const agent = await server.agent('meta-large');
    const metadata = {
      tags: elements(40),
      more: elements(30),
      a: nested(4),
      b: { c: 'x'.repeat(100) },
      ...Object.fromEntries(elements(16).map((k) => [k, k])),
    };
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(
        (await agent.post('/api/v1/artifacts/snippets', { name: `l${i}`, content: i, metadata: i % 2 === 0 ? metadata : { tags: [] } }))
          .body.data.id,
      );
    }
    // 20 keys at the top, 20 elements in an array, 5 levels, 64 keys and elements in all.
    const filter = {
      tags: elements(20),
      more: elements(19),
      a: nested(4),
      b: { c: 'x'.repeat(100) },
      ...Object.fromEntries(elements(16).map((k) => [k, k])),
    };
    const text = JSON.stringify(filter);
    expect(text.length).toBeLessThanOrEqual(4096);
    const res = await agent.get(`/api/v1/artifacts?limit=500&metadata=${encodeURIComponent(text)}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.map((a: { id: string }) => a.id)).toEqual(ids.filter((_, i) => i % 2 === 0));
  });
});

describeEachDialect('Artifacts: metadata filter beside other requests', (dialect) => {
  const server = useServer(dialect);
  const ARTIFACTS = 1000;
  const strings = Array.from({ length: 300 }, (_, i) => `t${i}`);
  const objects = Array.from({ length: 300 }, (_, i) => ({ k: `v${i}`, n: i }));

  // On SQLite the filter ran as one statement, and SQLite runs in the server's process: a
  // filter at its bounds over 1,000 artifacts with 300-element arrays held the event loop for
  // seconds, and /healthz with it. The filter now gives the loop back as it goes: /healthz
  // answers, one request after another, while the list is still being answered.
  it(
    'answers /healthz while the costliest allowed filter runs over 1,000 artifacts with 300-element arrays',
    { timeout: 120_000 },
    async () => {
      const agent = await server.agent('meta-load');
      const evenIds: string[] = [];
      const create = async (i: number) => {
        const metadata = { tags: strings, objs: objects, kind: i % 2 === 0 ? 'even' : 'odd' };
        const res = await agent.post('/api/v1/artifacts/snippets', { name: `load${i}`, content: i, metadata });
        expect(res.status, res.text).toBe(201);
        if (i % 2 === 0) evenIds.push(res.body.data.id);
      };
      for (let i = 0; i < ARTIFACTS; i += 10) await Promise.all(Array.from({ length: 10 }, (_, j) => create(i + j)));
      // 62 keys and elements, 20 per array, the wanted elements last in the stored arrays.
      const filter = { kind: 'even', tags: strings.slice(-20), objs: objects.slice(-20).map(({ k }) => ({ k })) };

      let listed = false;
      const list = agent
        .get(`/api/v1/artifacts?limit=10&metadata=${encodeURIComponent(JSON.stringify(filter))}`)
        .finally(() => (listed = true));
      let answeredBefore = 0;
      while (!listed) {
        const health = await fetch(`${server.url}/healthz`);
        expect(health.status).toBe(200);
        if (!listed) answeredBefore++;
      }
      const res = await list;
      expect(res.status, res.text).toBe(200);
      expect(res.body.meta.total).toBe(ARTIFACTS / 2);
      expect(res.body.data.map((a: { id: string }) => a.id)).toEqual(evenIds.sort().slice(0, 10));
      expect(answeredBefore, 'requests to /healthz answered while the filter ran').toBeGreaterThanOrEqual(3);
    },
  );
});
