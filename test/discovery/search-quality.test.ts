import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { register, search } from './fixtures.js';

interface QualitySet {
  capabilities: { capability: string; description: string; tags?: string[]; examples?: string[] }[];
  queries: { query: string; expected: string }[];
}

const set = JSON.parse(
  fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'search-quality.json'), 'utf8'),
) as QualitySet;

/** Targets of issue 4 for the local (lexical) ranker. */
const TOP3_TARGET = 0.9;

describeEachDialect('discovery search quality', (dialect) => {
  const server = useServer(dialect);

  it(`ranks the expected capability in the top 3 for ≥ ${TOP3_TARGET * 100}% of ${set.queries.length} queries over ${set.capabilities.length} capabilities`, async () => {
    expect(set.capabilities.length).toBeGreaterThanOrEqual(30);
    expect(set.queries.length).toBeGreaterThanOrEqual(30);
    const known = new Set(set.capabilities.map((c) => c.capability));
    for (const q of set.queries) expect(known, q.query).toContain(q.expected);

    for (const [i, c] of set.capabilities.entries()) {
      const metadata: Record<string, unknown> = { description: c.description };
      if (c.tags) metadata.tags = c.tags;
      if (c.examples) metadata.examples = c.examples;
      await register(server.api, `quality-agent-${i}`, c.capability, metadata);
    }

    let top1 = 0;
    let top3 = 0;
    const misses: string[] = [];
    for (const q of set.queries) {
      const body = await search(server.api, { query: q.query, top_k: 3 });
      const ranked: string[] = body.data.results.map((r: { capability: { name: string } }) => r.capability.name);
      if (ranked[0] === q.expected) top1 += 1;
      if (ranked.includes(q.expected)) top3 += 1;
      else misses.push(`"${q.query}" → expected ${q.expected}, got ${ranked.join(', ') || 'nothing'}`);
    }
    const n = set.queries.length;
    process.stdout.write(
      `search quality [${dialect}]: top-1 ${top1}/${n} (${((100 * top1) / n).toFixed(1)}%), ` +
        `top-3 ${top3}/${n} (${((100 * top3) / n).toFixed(1)}%)${misses.length ? `; misses: ${misses.join('; ')}` : ''}\n`,
    );
    expect(top3 / n, misses.join('\n')).toBeGreaterThanOrEqual(TOP3_TARGET);
  });
});
