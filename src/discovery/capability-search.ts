import type { Logger } from 'pino';
import { autocommit } from '../kernel/tx.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { Clock } from '../kernel/clock.js';
import type { Embedder } from './embeddings.js';
import { CapabilityIndex, unit, type IndexedCapability, type SearchHit } from './search.js';
import type { CapabilityRow, DiscoveryStore } from './store.js';

const EMBED_BATCH = 64;
const QUERY_VECTOR_CACHE = 256;

export interface SearchInput {
  query: string;
  top_k?: number;
  min_score?: number;
}

function toIndexed(row: CapabilityRow): IndexedCapability {
  return {
    id: row.id,
    name: row.capability,
    agent_id: row.agent_id,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    groups: JSON.parse(row.groups) as string[],
  };
}

/**
 * Capability search on this node: an in-memory index (search.ts) kept up to the database
 * through the capabilities' change log, its vectors filled by the embeddings endpoint when
 * there is one, and queried with a lexical score blended with cosine similarity.
 */
export class CapabilitySearch {
  private readonly index = new CapabilityIndex();
  /** The change seq the index reflects; -1 before the first build. */
  private indexedSeq = -1;
  private syncRequested = false;
  private syncing: Promise<void> | null = null;
  private embedding: Promise<void> | null = null;
  private readonly queryVectors = new BoundedMap<string, Float32Array>(QUERY_VECTOR_CACHE);

  constructor(
    private readonly deps: {
      store: DiscoveryStore;
      clock: Clock;
      logger: Logger;
      /** Embeddings endpoint for the search blend; lexical only without it. */
      embedder: Embedder | null;
    },
  ) {}

  async search(input: SearchInput): Promise<{ results: SearchHit[]; ranker: 'lexical' | 'lexical+embeddings' }> {
    await this.syncIndex();
    let queryVector: Float32Array | undefined;
    if (this.deps.embedder) {
      try {
        [queryVector] = await Promise.all([this.queryVector(input.query), this.embedMissing()]);
      } catch (err) {
        this.deps.logger.warn({ err }, 'embeddings endpoint failed; search falls back to lexical scores');
        queryVector = undefined;
      }
    }
    const results = this.index.search(input.query, {
      topK: input.top_k ?? 10,
      minScore: input.min_score ?? 0,
      queryVector,
    });
    return { results, ranker: queryVector ? 'lexical+embeddings' : 'lexical' };
  }

  private async queryVector(query: string): Promise<Float32Array> {
    const cached = this.queryVectors.get(query);
    if (cached) return cached;
    const [vector] = await this.deps.embedder!.embed([query]);
    const unitVector = unit(vector!);
    this.queryVectors.set(query, unitVector);
    return unitVector;
  }

  /**
   * Embeds indexed capabilities that have no (current) vector. A run already in flight may
   * have listed its work before the newest capabilities were indexed, so after waiting for it
   * look again (bounded: a capability changing on every pass cannot keep a search waiting).
   */
  async embedMissing(): Promise<void> {
    for (let pass = 0; pass < 3 && this.deps.embedder && this.index.needingVectors().length > 0; pass++) {
      await this.embedRun();
    }
  }

  /** One embedding run over what is missing now, in batches; one run at a time. */
  private embedRun(): Promise<void> {
    this.embedding ??= (async () => {
      try {
        const missing = this.index.needingVectors();
        for (let i = 0; i < missing.length; i += EMBED_BATCH) {
          const batch = missing.slice(i, i + EMBED_BATCH);
          const vectors = await this.deps.embedder!.embed(batch.map((m) => m.text));
          batch.forEach((m, j) => this.index.setVector(m.id, m.text, Float32Array.from(vectors[j]!)));
        }
      } finally {
        this.embedding = null;
      }
    })();
    return this.embedding;
  }

  /**
   * Brings the search index up to the database: rebuilt the first time (and when this node
   * fell behind pruned history), otherwise patched with the capabilities changed since the
   * seq it reflects. Concurrent callers share one pass; a call made during a pass gets
   * another pass after it, so it always sees changes committed before it was made.
   */
  syncIndex(): Promise<void> {
    this.syncRequested = true;
    this.syncing ??= (async () => {
      try {
        while (this.syncRequested) {
          this.syncRequested = false;
          await this.syncOnce();
        }
      } finally {
        this.syncing = null;
      }
    })();
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    const marks = await this.deps.store.changeMarks(autocommit);
    if (this.indexedSeq < 0 || marks.pruned > this.indexedSeq) {
      const snapshot = await this.deps.store.snapshot(autocommit);
      this.index.reset(snapshot.rows.map(toIndexed));
      this.indexedSeq = snapshot.seq;
      return;
    }
    if (marks.seq <= this.indexedSeq) return;
    // All of them at once: one change (an agent's deletion) may share its seq with many rows.
    for (const change of await this.deps.store.changesSince(autocommit, this.indexedSeq)) {
      if (change.row) this.index.upsert(toIndexed(change.row));
      else this.index.remove(change.capability_id);
      this.indexedSeq = Math.max(this.indexedSeq, change.seq);
    }
  }

  /** Forgets deletions older than a day (see DiscoveryStore.pruneTombstones). */
  async pruneHistory(): Promise<number> {
    return this.deps.store.pruneTombstones(autocommit, this.deps.clock.now() - 24 * 3600_000);
  }
}
