import SearchableMap from 'minisearch/SearchableMap';
import { isStopWord, queryTokens, stemWord, words, type QueryToken } from './text.js';

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

// Field boosts: a word in the capability's name or tags says more than one in its prose.
const FIELDS = ['name', 'description', 'tags', 'examples'] as const;
const FIELD_BOOST = [2, 1, 1.5, 0.8];
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
// BM25 parameters and approximate-match weights of MiniSearch 7, whose document-per-capability
// index this one replaced: a capability scores what it scored there (see lexicalScores).
const BM25_K = 1.2;
const BM25_B = 0.7;
const BM25_D = 0.5;
const PREFIX_WEIGHT = 0.375;
const FUZZY_WEIGHT = 0.45;
const MAX_FUZZY = 6;
const FUZZY_SHARE = 0.2;

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.filter((v) => typeof v === 'string').join(' \n ');
  return '';
}

/** The text a capability is found by (also what is sent for its embedding). */
export function searchableText(capability: Pick<IndexedCapability, 'name' | 'metadata'>): string {
  const m = capability.metadata;
  return [words(capability.name).join(' '), text(m.description), text(m.tags), text(m.examples)].filter((part) => part !== '').join('. ');
}

function fieldTexts(capability: IndexedCapability): string[] {
  const m = capability.metadata;
  return [capability.name, text(m.description), text(m.tags), text(m.examples)];
}

/**
 * One distinct searchable text and the capabilities that share it: replicas of an agent
 * register the same name and metadata, so 10,000 agents across 100 capabilities hold a few
 * hundred texts, and a query scores each text once instead of each capability.
 */
interface Content {
  key: string;
  /** Its row in the per-query scratch arrays. */
  slot: number;
  /** The capabilities with this text, ascending by id (registration order). */
  members: string[];
  /** Per field: distinct words (BM25 field length, counted as MiniSearch counts it). */
  lengths: number[];
  /** Each term with its frequency per field. */
  terms: Map<string, number[]>;
}

/** A term of the vocabulary: where it occurs, counted per capability (not per text). */
interface Term {
  /** Capabilities whose text holds it in any field (the coverage IDF). */
  capabilities: number;
  /** Per field: capabilities holding it in that field (the BM25 IDF). */
  inField: number[];
  /** The texts holding it, with its frequency per field. */
  contents: Map<Content, number[]>;
}

/** Index of `id` in an ascending array, or where it would go (binary search). */
function position(sorted: string[], id: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The best `k` (id, score) pairs seen, best first, ties by id: a sorted array of at most k
 * (k ≤ 100), so choosing the top k of n hits costs n comparisons instead of an n log n sort.
 */
class TopK {
  readonly items: { id: string; score: number }[] = [];
  constructor(private readonly k: number) {}

  /** Keeps the pair if it ranks among the best k; false when it does not. */
  offer(id: string, score: number): boolean {
    const items = this.items;
    const last = items[items.length - 1];
    if (items.length >= this.k && last && (score < last.score || (score === last.score && id > last.id))) return false;
    let i = items.length;
    while (i > 0 && (items[i - 1]!.score < score || (items[i - 1]!.score === score && items[i - 1]!.id > id))) i--;
    items.splice(i, 0, { id, score });
    if (items.length > this.k) items.pop();
    return true;
  }
}

/**
 * The in-memory capability search index of one node: BM25 over the capability name split into
 * words, `metadata.description`, `metadata.tags` and `metadata.examples`, with stemming and
 * synonyms from text.ts. Terms live in MiniSearch's radix tree (SearchableMap), which finds the
 * prefix and fuzzy matches of words no capability uses; postings point at distinct texts.
 *
 * Scores are absolute, in 0..1, not relative to the best hit, so `min_score` means the same
 * for every query: the main factor is coverage, the IDF-weighted share of the query's words
 * that the capability matches (synonyms and approximate matches count partly); BM25 then
 * separates capabilities that cover the query equally well.
 *
 * Measured on the bench's 10,000 capabilities (200 distinct texts), 10 queries in rotation:
 * MiniSearch with a document per capability took 4.2 ms a query, 57% of it building a result
 * object per matching capability; scoring each distinct text once takes about 0.1 ms.
 */
export class CapabilityIndex {
  private readonly capabilities = new Map<string, IndexedCapability>();
  private readonly contentOf = new Map<string, Content>();
  private readonly contents = new Map<string, Content>();
  private readonly vocabulary = new SearchableMap<Term>();
  /** Per field: total field length over all capabilities (for the BM25 average). */
  private readonly totalLength = FIELDS.map(() => 0);
  /** Contents by slot; freed slots are reused. */
  private readonly slots: (Content | undefined)[] = [];
  private readonly freeSlots: number[] = [];
  // Per-query scratch, reused (a search runs synchronously): per touched slot, its BM25 sum
  // and the best match quality of each query word; `stamp` marks the slots this query touched.
  private scratch = new Float64Array(0);
  private stamp = new Uint32Array(0);
  private epoch = 0;
  /** Unit-length embeddings of capabilities, with the text they were made from. */
  private readonly vectors = new Map<string, { text: string; vector: Float32Array }>();

  get size(): number {
    return this.capabilities.size;
  }

  has(id: string): boolean {
    return this.capabilities.has(id);
  }

  upsert(capability: IndexedCapability): void {
    if (this.capabilities.has(capability.id)) this.remove(capability.id);
    const fields = fieldTexts(capability);
    const key = fields.join('\u0000');
    let content = this.contents.get(key);
    if (!content) {
      content = this.createContent(key, fields);
      this.contents.set(key, content);
    }
    content.members.splice(position(content.members, capability.id), 0, capability.id);
    this.count(content, 1);
    this.capabilities.set(capability.id, capability);
    this.contentOf.set(capability.id, content);
  }

  remove(id: string): void {
    const content = this.contentOf.get(id);
    if (!content) return;
    content.members.splice(position(content.members, id), 1);
    this.count(content, -1);
    this.capabilities.delete(id);
    this.contentOf.delete(id);
    if (content.members.length === 0) this.dropContent(content);
  }

  /** Replaces the whole content (a rebuild); embeddings of unchanged capabilities are kept. */
  reset(capabilities: IndexedCapability[]): void {
    this.capabilities.clear();
    this.contentOf.clear();
    this.contents.clear();
    this.vocabulary.clear();
    this.totalLength.fill(0);
    this.slots.length = 0;
    this.freeSlots.length = 0;
    for (const capability of capabilities) this.upsert(capability);
  }

  private createContent(key: string, fields: string[]): Content {
    const terms = new Map<string, number[]>();
    const lengths = fields.map((field, f) => {
      const fieldWords = words(field);
      for (const word of fieldWords) {
        if (isStopWord(word)) continue;
        const stem = stemWord(word);
        const frequencies = terms.get(stem) ?? FIELDS.map(() => 0);
        frequencies[f]! += 1;
        terms.set(stem, frequencies);
      }
      return new Set(fieldWords).size;
    });
    const slot = this.freeSlots.pop() ?? this.slots.length;
    const content: Content = { key, slot, members: [], lengths, terms };
    this.slots[slot] = content;
    for (const [stem, frequencies] of terms) {
      let term = this.vocabulary.get(stem);
      if (!term) {
        term = { capabilities: 0, inField: FIELDS.map(() => 0), contents: new Map() };
        this.vocabulary.set(stem, term);
      }
      term.contents.set(content, frequencies);
    }
    return content;
  }

  private dropContent(content: Content): void {
    for (const stem of content.terms.keys()) {
      const term = this.vocabulary.get(stem)!;
      term.contents.delete(content);
      if (term.contents.size === 0) this.vocabulary.delete(stem);
    }
    this.contents.delete(content.key);
    this.slots[content.slot] = undefined;
    this.freeSlots.push(content.slot);
  }

  /** Counts one capability more (+1) or fewer (−1) with this content. */
  private count(content: Content, delta: 1 | -1): void {
    for (let f = 0; f < FIELDS.length; f++) this.totalLength[f]! += delta * content.lengths[f]!;
    for (const [stem, frequencies] of content.terms) {
      const term = this.vocabulary.get(stem)!;
      term.capabilities += delta;
      for (let f = 0; f < FIELDS.length; f++) if (frequencies[f]! > 0) term.inField[f]! += delta;
    }
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
    const known = tokens.map((t) => Math.max(0, ...t.expansions.map((e) => this.vocabulary.get(e.term)?.capabilities ?? 0)));
    const knownWeights = known.filter((df) => df > 0).map((df) => this.idf(df));
    const mean = knownWeights.length > 0 ? knownWeights.reduce((a, b) => a + b, 0) / knownWeights.length : 1;
    return known.map((df) => (df > 0 ? this.idf(df) : UNKNOWN_WORD_WEIGHT * mean));
  }

  /**
   * The index terms a query term matches, with their weight: itself, and for a word no
   * capability uses, its prefix and fuzzy matches (MiniSearch's weights for those).
   */
  private matches(term: string, approximate: boolean): [string, number][] {
    const out: [string, number][] = this.vocabulary.has(term) ? [[term, 1]] : [];
    if (!approximate) return out;
    const maxDistance = term.length >= 5 ? Math.min(MAX_FUZZY, Math.round(term.length * FUZZY_SHARE)) : 0;
    const fuzzy = maxDistance > 0 ? this.vocabulary.fuzzyGet(term, maxDistance) : new Map<string, [Term, number]>();
    for (const derived of this.vocabulary.atPrefix(term).keys()) {
      const distance = derived.length - term.length;
      if (distance === 0) continue;
      fuzzy.delete(derived);
      out.push([derived, (PREFIX_WEIGHT * derived.length) / (derived.length + 0.3 * distance)]);
    }
    for (const [derived, [, distance]] of fuzzy) {
      if (distance > 0) out.push([derived, (FUZZY_WEIGHT * derived.length) / (derived.length + distance)]);
    }
    return out;
  }

  /**
   * Lexical scores (0..1) of every distinct text that matches the query at all: one pass over
   * the postings of every expansion of every word. Each matched term maps back to the words it
   * stands for; BM25 sums over terms and fields as MiniSearch does (a capability's score is
   * what MiniSearch gave it with a document per capability).
   */
  private lexicalScores(query: string): Map<Content, number> {
    const tokens = queryTokens(query);
    const scores = new Map<Content, number>();
    const n = this.capabilities.size;
    if (tokens.length === 0 || n === 0) return scores;
    const weights = this.weights(tokens);
    const totalWeight = weights.reduce((a, b) => a + b, 0);
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
    const approximate = new Set(tokens.filter((t) => t.stem.length >= 4 && !this.vocabulary.has(t.stem)).map((t) => t.stem));

    const width = 1 + tokens.length;
    this.prepareScratch(width);
    const { scratch, stamp, epoch } = this;
    const average = this.totalLength.map((total) => total / n);
    const touched: Content[] = [];
    for (const [queryTerm, standing] of standsFor) {
      const termBoost = Math.max(...standing.map((s) => s.quality));
      for (const [derived, weight] of this.matches(queryTerm, approximate.has(queryTerm))) {
        const term = this.vocabulary.get(derived)!;
        const quality = derived === queryTerm ? 1 : APPROXIMATE_QUALITY;
        const idf = term.inField.map((df) => Math.log(1 + (n - df + 0.5) / (df + 0.5)));
        for (const [content, frequencies] of term.contents) {
          const base = content.slot * width;
          if (stamp[content.slot] !== epoch) {
            stamp[content.slot] = epoch;
            scratch.fill(0, base, base + width);
            touched.push(content);
          }
          let bm25 = 0;
          for (let f = 0; f < FIELDS.length; f++) {
            const tf = frequencies[f]!;
            if (tf === 0) continue;
            const norm = 1 - BM25_B + (BM25_B * content.lengths[f]!) / average[f]!;
            bm25 += weight * termBoost * FIELD_BOOST[f]! * idf[f]! * (BM25_D + (tf * (BM25_K + 1)) / (tf + BM25_K * norm));
          }
          scratch[base]! += bm25;
          for (const { token, quality: synonym } of standing) {
            const q = synonym * quality;
            if (q > scratch[base + 1 + token]!) scratch[base + 1 + token] = q;
          }
        }
      }
    }
    for (const content of touched) {
      const base = content.slot * width;
      let coverage = 0;
      for (let i = 0; i < tokens.length; i++) coverage += weights[i]! * scratch[base + 1 + i]!;
      const share = Math.min(1, coverage / totalWeight);
      const bm25 = scratch[base]!;
      scores.set(content, share ** COVERAGE_POWER * (BASE + (1 - BASE) * (bm25 / (bm25 + BM25_HALF))));
    }
    return scores;
  }

  /** Sizes the scratch arrays for this many slots of `width` and starts a new epoch. */
  private prepareScratch(width: number): void {
    const slots = this.slots.length;
    if (this.scratch.length < slots * width) this.scratch = new Float64Array(Math.max(64, 2 * slots * width));
    if (this.stamp.length < slots || this.epoch >= 0xffffffff) {
      this.stamp = new Uint32Array(Math.max(64, 2 * slots));
      this.epoch = 0;
    }
    this.epoch += 1;
  }

  search(query: string, options: SearchOptions): SearchHit[] {
    const lexical = this.lexicalScores(query);
    const top = new TopK(options.topK);
    const admits = (score: number) => score > 0 && score >= options.minScore;
    if (options.queryVector) {
      for (const [id, { vector }] of this.vectors) {
        const content = this.contentOf.get(id);
        if (!content) continue;
        const cosine = Math.max(0, dot(vector, options.queryVector));
        const score = (1 - EMBEDDING_WEIGHT) * (lexical.get(content) ?? 0) + EMBEDDING_WEIGHT * cosine;
        if (admits(score)) top.offer(id, score);
      }
      // A capability without an embedding yet keeps its lexical share only.
      for (const [content, score] of lexical) {
        for (const id of content.members) {
          if (!this.vectors.has(id) && admits((1 - EMBEDDING_WEIGHT) * score)) top.offer(id, (1 - EMBEDDING_WEIGHT) * score);
        }
      }
    } else {
      for (const [content, score] of lexical) {
        if (!admits(score)) continue;
        // Members share the score and come in id order: after the first one that does not
        // make the cut, none of the rest can.
        for (const id of content.members) if (!top.offer(id, score)) break;
      }
    }
    return top.items.map((hit) => ({
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
