import MiniSearch from 'minisearch';
import { queryTokens, terms, words, type QueryToken } from './text.js';

/** What the index knows of a capability (the search result's `capability` object). */
export interface IndexedCapability {
  id: string;
  name: string;
  agent_id: string;
  metadata: Record<string, unknown>;
  groups: string[];
}

export interface SearchHit {
  capability: IndexedCapability;
  similarity_score: number;
}

export interface SearchOptions {
  topK: number;
  minScore: number;
  /** The query's unit-length embedding; blends cosine similarity into the score. */
  queryVector?: Float32Array;
}

interface IndexedDoc {
  id: string;
  name: string;
  description: string;
  tags: string;
  examples: string;
}

// Field boosts: a word in the capability's name or tags says more than one in its prose.
const BOOST = { name: 2, tags: 1.5, description: 1, examples: 0.8 };
/** A fuzzy or prefix match (a typo, a truncated word) counts this much of an exact one. */
const APPROXIMATE_QUALITY = 0.7;
/**
 * A query word no capability uses weighs this fraction of the average known word: it cannot
 * tell capabilities apart, but a query made mostly of them is a poor match for anything.
 */
const UNKNOWN_WORD_WEIGHT = 0.5;
/** Score = coverage^COVERAGE_POWER × (BASE + (1 − BASE) × bm25 / (bm25 + BM25_HALF)). */
const COVERAGE_POWER = 1.5;
const BASE = 0.75;
const BM25_HALF = 8;
/** Weight of embedding cosine similarity in the blended score (the rest is lexical). */
export const EMBEDDING_WEIGHT = 0.5;

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.filter((v) => typeof v === 'string').join(' \n ');
  return '';
}

/** The text a capability is found by (also what is sent for its embedding). */
export function searchableText(capability: Pick<IndexedCapability, 'name' | 'metadata'>): string {
  const m = capability.metadata;
  return [
    words(capability.name).join(' '),
    text(m.description),
    text(m.tags),
    text(m.examples),
  ]
    .filter((part) => part !== '')
    .join('. ');
}

function toDoc(capability: IndexedCapability): IndexedDoc {
  const m = capability.metadata;
  return {
    id: capability.id,
    name: capability.name,
    description: text(m.description),
    tags: text(m.tags),
    examples: text(m.examples),
  };
}

/**
 * The in-memory capability search index of one node: MiniSearch (BM25) over the capability
 * name split into words, `metadata.description`, `metadata.tags` and `metadata.examples`,
 * with stemming and synonyms from text.ts.
 *
 * Scores are absolute, in 0..1, not relative to the best hit, so `min_score` means the same
 * for every query: the main factor is coverage, the IDF-weighted share of the query's words
 * that the capability matches (synonyms and approximate matches count partly); BM25 then
 * separates capabilities that cover the query equally well.
 */
export class CapabilityIndex {
  private mini = CapabilityIndex.createMini();
  private readonly capabilities = new Map<string, IndexedCapability>();
  /** Distinct stems of each document, and how many documents hold each stem (for IDF). */
  private readonly docTerms = new Map<string, Set<string>>();
  private readonly documentFrequency = new Map<string, number>();
  /** Unit-length embeddings of capabilities, with the text they were made from. */
  private readonly vectors = new Map<string, { text: string; vector: Float32Array }>();

  private static createMini(): MiniSearch<IndexedDoc> {
    return new MiniSearch<IndexedDoc>({
      fields: ['name', 'description', 'tags', 'examples'],
      storeFields: [],
      tokenize: (value) => words(value),
      processTerm: (term) => {
        const processed = terms(term);
        return processed.length === 0 ? null : processed;
      },
      searchOptions: {
        // Query strings are already stems joined by spaces (see search()).
        tokenize: (value) => value.split(' '),
        processTerm: (term) => term,
        boost: BOOST,
      },
    });
  }

  get size(): number {
    return this.capabilities.size;
  }

  has(id: string): boolean {
    return this.capabilities.has(id);
  }

  upsert(capability: IndexedCapability): void {
    if (this.capabilities.has(capability.id)) this.remove(capability.id);
    const doc = toDoc(capability);
    this.mini.add(doc);
    this.capabilities.set(capability.id, capability);
    const stems = new Set(terms(`${capability.name} ${doc.description} ${doc.tags} ${doc.examples}`));
    this.docTerms.set(capability.id, stems);
    for (const stem of stems) this.documentFrequency.set(stem, (this.documentFrequency.get(stem) ?? 0) + 1);
  }

  remove(id: string): void {
    if (!this.capabilities.has(id)) return;
    this.mini.discard(id);
    this.capabilities.delete(id);
    for (const stem of this.docTerms.get(id) ?? []) {
      const n = (this.documentFrequency.get(stem) ?? 1) - 1;
      if (n <= 0) this.documentFrequency.delete(stem);
      else this.documentFrequency.set(stem, n);
    }
    this.docTerms.delete(id);
  }

  /** Replaces the whole content (a rebuild); embeddings of unchanged capabilities are kept. */
  reset(capabilities: IndexedCapability[]): void {
    this.mini = CapabilityIndex.createMini();
    this.capabilities.clear();
    this.docTerms.clear();
    this.documentFrequency.clear();
    for (const capability of capabilities) this.upsert(capability);
  }

  /** Capabilities whose embedding is missing or stale, with the text to embed. */
  needingVectors(): { id: string; text: string }[] {
    const out: { id: string; text: string }[] = [];
    for (const capability of this.capabilities.values()) {
      const wanted = searchableText(capability);
      if (this.vectors.get(capability.id)?.text !== wanted) out.push({ id: capability.id, text: wanted });
    }
    for (const id of this.vectors.keys()) if (!this.capabilities.has(id)) this.vectors.delete(id);
    return out;
  }

  setVector(id: string, text: string, vector: Float32Array): void {
    if (this.capabilities.has(id)) this.vectors.set(id, { text, vector: unit(vector) });
  }

  private idf(df: number): number {
    const n = this.capabilities.size;
    return Math.log(1 + (n - df + 0.5) / (df + 0.5));
  }

  /** IDF weight of each query token; tokens no document uses get UNKNOWN_WORD_WEIGHT of the mean. */
  private weights(tokens: QueryToken[]): number[] {
    const known = tokens.map((t) => Math.max(0, ...t.expansions.map((e) => this.documentFrequency.get(e.term) ?? 0)));
    const knownWeights = known.filter((df) => df > 0).map((df) => this.idf(df));
    const mean = knownWeights.length > 0 ? knownWeights.reduce((a, b) => a + b, 0) / knownWeights.length : 1;
    return known.map((df) => (df > 0 ? this.idf(df) : UNKNOWN_WORD_WEIGHT * mean));
  }

  /** Lexical scores (0..1) of every capability that matches the query at all. */
  lexicalScores(query: string): Map<string, number> {
    const tokens = queryTokens(query);
    const scores = new Map<string, number>();
    if (tokens.length === 0 || this.capabilities.size === 0) return scores;
    const weights = this.weights(tokens);
    const totalWeight = weights.reduce((a, b) => a + b, 0);
    // One search for every expansion of every word (one pass over the index and one sort,
    // measured 3× faster than a search per word); each matched term maps back to the words it
    // stands for.
    const standsFor = new Map<string, { token: number; quality: number }[]>();
    tokens.forEach((token, i) => {
      for (const e of token.expansions) {
        const list = standsFor.get(e.term) ?? [];
        list.push({ token: i, quality: e.quality });
        standsFor.set(e.term, list);
      }
    });
    // Typos and truncations only for words no capability uses (a known word is taken as
    // meant), and only when long enough that one edit does not make it another word.
    const approximate = new Set(
      tokens.filter((t) => t.stem.length >= 4 && !this.documentFrequency.has(t.stem)).map((t) => t.stem),
    );
    const boost = (term: string) => Math.max(...(standsFor.get(term) ?? [{ quality: 1 }]).map((s) => s.quality));
    const results = this.mini.search([...standsFor.keys()].join(' '), {
      combineWith: 'OR',
      fuzzy: (term) => (approximate.has(term) && term.length >= 5 ? 0.2 : false),
      prefix: (term) => approximate.has(term),
      boostTerm: boost,
    });
    const best = new Array<number>(tokens.length);
    for (const result of results) {
      best.fill(0);
      for (const term of result.queryTerms) {
        const exact = Object.prototype.hasOwnProperty.call(result.match, term);
        for (const { token, quality } of standsFor.get(term) ?? []) {
          best[token] = Math.max(best[token]!, quality * (exact ? 1 : APPROXIMATE_QUALITY));
        }
      }
      let coverage = 0;
      for (let i = 0; i < tokens.length; i++) coverage += weights[i]! * best[i]!;
      const share = Math.min(1, coverage / totalWeight);
      // MiniSearch multiplies a hit's score by the number of query terms it matched; synonyms
      // of one word should not count several times, so that factor is taken out again.
      const bm25 = result.score / Math.max(1, result.queryTerms.length);
      scores.set(result.id as string, share ** COVERAGE_POWER * (BASE + (1 - BASE) * (bm25 / (bm25 + BM25_HALF))));
    }
    return scores;
  }

  search(query: string, options: SearchOptions): SearchHit[] {
    let scores = this.lexicalScores(query);
    if (options.queryVector) {
      const blended = new Map<string, number>();
      for (const [id, { vector }] of this.vectors) {
        const cosine = Math.max(0, dot(vector, options.queryVector));
        blended.set(id, (1 - EMBEDDING_WEIGHT) * (scores.get(id) ?? 0) + EMBEDDING_WEIGHT * cosine);
      }
      // A capability without an embedding yet keeps its lexical share only.
      for (const [id, score] of scores) if (!blended.has(id)) blended.set(id, (1 - EMBEDDING_WEIGHT) * score);
      scores = blended;
    }
    const hits: { id: string; score: number }[] = [];
    for (const [id, score] of scores) {
      if (score > 0 && score >= options.minScore) hits.push({ id, score });
    }
    hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return hits.slice(0, options.topK).map((hit) => ({
      capability: this.capabilities.get(hit.id)!,
      similarity_score: Math.round(hit.score * 10_000) / 10_000,
    }));
  }
}

export function unit(vector: ArrayLike<number>): Float32Array {
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += vector[i]! * vector[i]!;
  norm = Math.sqrt(norm) || 1;
  const out = new Float32Array(vector.length);
  for (let i = 0; i < vector.length; i++) out[i] = vector[i]! / norm;
  return out;
}

function dot(a: Float32Array, b: Float32Array): number {
  const n = Math.min(a.length, b.length);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += a[i]! * b[i]!;
  return sum;
}
