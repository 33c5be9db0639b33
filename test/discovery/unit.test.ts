import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { healthOf, route, STRATEGIES, type Candidate, type Health } from '../../src/discovery/routing.js';
import { CapabilityIndex } from '../../src/discovery/search.js';
import { capabilityFilter } from '../../src/discovery/views.js';
import { queryTokens, stemWord, terms, words } from '../../src/discovery/text.js';

const health = fc.constantFrom<Health>('healthy', 'degraded', 'unhealthy', 'unknown');
const candidate = fc.record({
  agent_id: fc.string({ minLength: 1, maxLength: 6 }),
  order: fc.string({ minLength: 1, maxLength: 6 }),
  health,
  load: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }),
  weight: fc.oneof(fc.constant(0), fc.double({ min: 0.01, max: 100, noNaN: true })),
  score: fc.option(fc.double({ min: 0, max: 10_000, noNaN: true }), { nil: null }),
});
// Distinct agents with distinct registration order, as the lookup produces them.
const candidates = fc
  .uniqueArray(candidate, { selector: (c) => c.agent_id, maxLength: 12 })
  .map((list) => list.map((c, i) => ({ ...c, order: `cap_${String(i).padStart(3, '0')}` })));

/** A deterministic random source for a seed (mulberry32). */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('routing strategies', () => {
  it('every strategy returns a permutation with unhealthy agents last', () => {
    fc.assert(
      fc.property(candidates, fc.constantFrom(...STRATEGIES), fc.nat(1000), fc.integer(), (list, strategy, cursor, seed) => {
        const ordered = route(strategy, list, { cursor, random: seeded(seed) });
        expect(ordered.map((c) => c.agent_id).sort()).toEqual(list.map((c) => c.agent_id).sort());
        const firstDead = ordered.findIndex((c) => c.health === 'unhealthy');
        if (firstDead >= 0) expect(ordered.slice(firstDead).every((c) => c.health === 'unhealthy')).toBe(true);
      }),
    );
  });

  it('deterministic strategies order by their key, ties and missing values by registration', () => {
    fc.assert(
      fc.property(candidates, (list) => {
        const live = (xs: Candidate[]) => xs.filter((c) => c.health !== 'unhealthy');
        const ctx = { cursor: 0, random: () => 0.5 };
        const check = (xs: Candidate[], key: (c: Candidate) => number | null) => {
          for (let i = 1; i < xs.length; i++) {
            const [a, b] = [key(xs[i - 1]!), key(xs[i]!)];
            if (a === null) expect(b).toBeNull();
            else if (b !== null) {
              expect(a).toBeLessThanOrEqual(b);
              if (a === b) expect(xs[i - 1]!.order < xs[i]!.order).toBe(true);
            }
          }
        };
        check(live(route('least_loaded', list, ctx)), (c) => c.load);
        check(live(route('latency', list, ctx)), (c) => c.score);
        check(live(route('trust', list, ctx)), (c) => (c.score === null ? null : -c.score));
        const rank: Record<Health, number> = { healthy: 0, degraded: 1, unknown: 2, unhealthy: 3 };
        check(live(route('first_available', list, ctx)), (c) => rank[c.health] * 1000 + Number(c.order.slice(4)));
      }),
    );
  });

  it('round_robin starts at the cursor in registration order and wraps around', () => {
    fc.assert(
      fc.property(candidates, fc.nat(10_000), (list, cursor) => {
        const live = list.filter((c) => c.health !== 'unhealthy').sort((a, b) => (a.order < b.order ? -1 : 1));
        fc.pre(live.length > 0);
        const ordered = route('round_robin', list, { cursor, random: Math.random });
        expect(ordered[0]!.agent_id).toBe(live[cursor % live.length]!.agent_id);
        const wrapped = route('round_robin', list, { cursor: cursor + live.length, random: Math.random });
        expect(wrapped.slice(0, live.length)).toEqual(ordered.slice(0, live.length));
      }),
    );
  });

  it('weighted never puts a zero-weight agent before a positive one', () => {
    fc.assert(
      fc.property(candidates, fc.integer(), (list, seed) => {
        const live = route('weighted', list, { cursor: 0, random: seeded(seed) }).filter((c) => c.health !== 'unhealthy');
        const firstZero = live.findIndex((c) => c.weight === 0);
        if (firstZero >= 0) expect(live.slice(firstZero).every((c) => c.weight === 0)).toBe(true);
      }),
    );
  });

  it('weighted picks the first agent in proportion to weight', () => {
    const base = { health: 'healthy' as const, load: null, score: null };
    const list: Candidate[] = [
      { ...base, agent_id: 'a', order: '1', weight: 1 },
      { ...base, agent_id: 'b', order: '2', weight: 3 },
    ];
    const random = seeded(42);
    let b = 0;
    const rounds = 20_000;
    for (let i = 0; i < rounds; i++) if (route('weighted', list, { cursor: 0, random })[0]!.agent_id === 'b') b += 1;
    // Expected 0.75; sd of the share is 0.003.
    expect(b / rounds).toBeGreaterThan(0.735);
    expect(b / rounds).toBeLessThan(0.765);
  });
});

describe('health', () => {
  it('follows design §5: unknown, healthy, degraded at load ≥ 0.9, unhealthy past the TTL', () => {
    expect(healthOf(null, null, 1000, 30_000)).toBe('unknown');
    expect(healthOf(0, 0.1, 30_000, 30_000)).toBe('healthy');
    expect(healthOf(0, null, 30_000, 30_000)).toBe('healthy');
    expect(healthOf(0, 0.9, 30_000, 30_000)).toBe('degraded');
    expect(healthOf(0, 0.9, 30_001, 30_000)).toBe('unhealthy');
    expect(healthOf(0, 0.1, 30_001, 30_000)).toBe('unhealthy');
  });
});

describe('capability filters', () => {
  it('turns a trailing wildcard into a prefix ending in the dot', () => {
    expect(capabilityFilter('text.*')).toEqual({ prefix: 'text.' });
    expect(capabilityFilter('a.b.*')).toEqual({ prefix: 'a.b.' });
    expect(capabilityFilter('*')).toEqual({});
    expect(capabilityFilter(undefined)).toEqual({});
    expect(capabilityFilter('text.summarize')).toEqual({ exact: 'text.summarize' });
  });
});

describe('search text processing', () => {
  it('splits names, camelCase and punctuation into lowercase words', () => {
    expect(words('text.summarize')).toEqual(['text', 'summarize']);
    expect(words('image.detect-faces v2_beta')).toEqual(['image', 'detect', 'faces', 'v2', 'beta']);
    expect(words('extractPDFTables fromURL')).toEqual(['extract', 'pdftables', 'from', 'url']);
  });

  it('folds British spellings and inflections onto one stem', () => {
    for (const [a, b] of [
      ['summarise', 'summarize'],
      ['summarised', 'summarizes'],
      ['organisation', 'organization'],
      ['analyse', 'analyze'],
      ['colour', 'color'],
      ['centre', 'center'],
      ['catalogue', 'catalog'],
      ['reports', 'report'],
      ['translating', 'translation'],
    ]) {
      expect(stemWord(a!), `${a} ~ ${b}`).toBe(stemWord(b!));
    }
  });

  it('drops stop words and expands synonyms at a discount', () => {
    expect(terms('Please summarise a long report for me')).toEqual([stemWord('summarize'), 'long', 'report']);
    const [token] = queryTokens('summarise');
    expect(token!.expansions[0]).toEqual({ term: stemWord('summarize'), quality: 1 });
    const synonyms = token!.expansions.slice(1);
    expect(synonyms.map((e) => e.term)).toContain(stemWord('condense'));
    for (const e of synonyms) expect(e.quality).toBeLessThan(1);
    expect(queryTokens('the a of')).toEqual([]);
    expect(queryTokens('report reports reporting').length).toBe(1);
  });

  it('never throws and yields only non-empty terms for any input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (input) => {
        for (const term of terms(input)) expect(term.length).toBeGreaterThan(0);
        for (const token of queryTokens(input)) expect(token.expansions.length).toBeGreaterThan(0);
      }),
    );
  });
});

describe('CapabilityIndex', () => {
  const doc = (id: string, name: string, description: string) => ({ id, name, agent_id: 'a', metadata: { description }, groups: [] });

  it('scores every hit within (0, 1], sorted, honouring top_k and min_score, for any query', () => {
    const index = new CapabilityIndex();
    index.upsert(doc('c1', 'text.summarize', 'condense a long document into key points'));
    index.upsert(doc('c2', 'image.resize', 'scale pictures to a width and height'));
    index.upsert(doc('c3', 'code.review', 'inspect a pull request for bugs'));
    fc.assert(
      fc.property(
        fc.string({ maxLength: 80 }),
        fc.integer({ min: 1, max: 5 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (query, topK, minScore) => {
          const hits = index.search(query, { topK, minScore });
          expect(hits.length).toBeLessThanOrEqual(topK);
          for (const hit of hits) {
            expect(hit.similarity_score).toBeGreaterThan(0);
            expect(hit.similarity_score).toBeLessThanOrEqual(1);
            expect(hit.similarity_score).toBeGreaterThanOrEqual(Math.floor(minScore * 10_000) / 10_000);
          }
          const scores = hits.map((h) => h.similarity_score);
          expect([...scores].sort((a, b) => b - a)).toEqual(scores);
        },
      ),
    );
  });

  it('tolerates typos and truncated words at a lower score than exact words', () => {
    const index = new CapabilityIndex();
    index.upsert(doc('c1', 'text.translate', 'translate text between languages'));
    index.upsert(doc('c2', 'image.resize', 'scale pictures'));
    const exact = index.search('translate', { topK: 1, minScore: 0 })[0]!;
    const typo = index.search('tranlate', { topK: 1, minScore: 0 })[0]!;
    const prefix = index.search('transl', { topK: 1, minScore: 0 })[0]!;
    expect(typo.capability.id).toBe('c1');
    expect(prefix.capability.id).toBe('c1');
    expect(typo.similarity_score).toBeLessThan(exact.similarity_score);
    expect(prefix.similarity_score).toBeLessThan(exact.similarity_score);
  });

  it('ranks capabilities that share one text (replicas) equally, in registration order, across top_k and removals', () => {
    const index = new CapabilityIndex();
    for (const id of ['c5', 'c2', 'c9', 'c4']) index.upsert(doc(id, 'text.summarize', 'condense a long document into key points'));
    index.upsert(doc('c1', 'text.translate', 'translate documents between languages'));
    const hits = index.search('condense a document', { topK: 3, minScore: 0 });
    expect(hits.map((h) => h.capability.id)).toEqual(['c2', 'c4', 'c5']);
    expect(new Set(hits.map((h) => h.similarity_score)).size).toBe(1);
    index.remove('c4');
    index.upsert(doc('c2', 'text.summarize', 'walrus tusks'));
    expect(index.search('condense a document', { topK: 3, minScore: 0 }).map((h) => h.capability.id)).toEqual(['c5', 'c9', 'c1']);
    expect(index.search('walrus', { topK: 3, minScore: 0 }).map((h) => h.capability.id)).toEqual(['c2']);
    for (const id of ['c5', 'c9']) index.remove(id);
    expect(index.search('points', { topK: 3, minScore: 0 })).toEqual([]);
    expect(index.size).toBe(2);
  });

  it('forgets removed capabilities and replaces updated ones', () => {
    const index = new CapabilityIndex();
    index.upsert(doc('c1', 'a.one', 'walrus tusks'));
    index.upsert(doc('c2', 'a.two', 'walrus whiskers'));
    expect(index.search('walrus', { topK: 5, minScore: 0 })).toHaveLength(2);
    index.remove('c1');
    expect(index.search('walrus', { topK: 5, minScore: 0 }).map((h) => h.capability.id)).toEqual(['c2']);
    index.upsert(doc('c2', 'a.two', 'narwhal'));
    expect(index.search('walrus', { topK: 5, minScore: 0 })).toEqual([]);
    index.reset([doc('c9', 'a.nine', 'walrus again')]);
    expect(index.search('walrus', { topK: 5, minScore: 0 }).map((h) => h.capability.id)).toEqual(['c9']);
    expect(index.size).toBe(1);
  });
});
