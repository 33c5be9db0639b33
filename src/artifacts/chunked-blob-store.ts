import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { autocommit, type Tx } from '../kernel/tx.js';
import { Conflict } from '../kernel/errors.js';
import type { NodeRegistry } from '../kernel/ports.js';
import { holdInline, Meter, meterInto, type BlobStore, type ByteRange, type StagedBlob } from './blob-store.js';
import type { BlobChunksStore } from './store.js';

/**
 * The size of a chunk row. 1 MiB keeps a row's bytes in TOAST (PostgreSQL moves values over
 * ~2 KiB out of line and compresses what compresses) and a 5 GiB upload at 5,120 rows, while an
 * upload holds at most one chunk in memory besides the stream's own buffers.
 */
export const CHUNK_BYTES = 1024 * 1024;
/** Staged chunk sets ended per sweep statement. */
const SWEEP_BATCH = 100;
/** Committed contents listed per query by `storedBefore`. */
const LIST_BATCH = 500;

/** The answer to an upload whose staged chunks were swept while it was received or before its commit. */
const swept = () =>
  new Conflict(
    'The upload was discarded while it was received: the node receiving it was taken for down and its staged bytes swept. Upload it again',
  );

function absent(key: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`blob ${key} is not stored`), { code: 'ENOENT' });
}

/**
 * Collects the bytes it is given into CHUNK_BYTES rows and writes each with one INSERT (and
 * touches the staging row, so a live upload is never taken for a crashed one). Backpressure:
 * the next chunk is not taken until the previous one's INSERT has returned.
 */
class ChunkSink extends Writable {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private seq = 0;

  constructor(
    private readonly store: BlobChunksStore,
    private readonly blobId: string,
  ) {
    super({ highWaterMark: CHUNK_BYTES });
  }

  private async take(chunk: Buffer): Promise<void> {
    let rest = chunk;
    while (this.pendingBytes + rest.length >= CHUNK_BYTES) {
      const head = rest.subarray(0, CHUNK_BYTES - this.pendingBytes);
      rest = rest.subarray(head.length);
      this.pending.push(head);
      this.pendingBytes += head.length;
      await this.flush();
    }
    if (rest.length > 0) {
      this.pending.push(rest);
      this.pendingBytes += rest.length;
    }
  }

  private async flush(): Promise<void> {
    if (this.pendingBytes === 0) return;
    const bytes = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    const seq = this.seq++;
    const appended = await this.store.inTransaction((tx) => this.store.appendChunk(tx, this.blobId, seq, bytes, Date.now()));
    if (!appended) throw swept();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.take(chunk).then(() => callback(), callback);
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.flush().then(() => callback(), callback);
  }
}

/**
 * Reads `range` of a content from its chunks, one chunk (or the part of one the range needs)
 * per query, the next asked only when the reader wants more: a download holds no connection
 * between chunks and at most one chunk in memory. A content deleted while it is read (its last
 * version deleted on another node) ends the stream with an error.
 */
class ChunkReader extends Readable {
  private position: number;

  constructor(
    private readonly store: BlobChunksStore,
    private readonly blobId: string,
    private readonly chunkBytes: number,
    start: number,
    private readonly end: number,
  ) {
    super({ highWaterMark: chunkBytes });
    this.position = start;
  }

  override _read(): void {
    if (this.position > this.end) {
      this.push(null);
      return;
    }
    const seq = Math.floor(this.position / this.chunkBytes);
    const offset = this.position % this.chunkBytes;
    const length = Math.min(this.chunkBytes - offset, this.end - this.position + 1);
    this.store.readChunk(autocommit, this.blobId, seq, offset, length).then(
      (bytes) => {
        if (bytes === undefined || bytes.length !== length) {
          this.destroy(new Error(`blob ${this.blobId} lost chunk ${seq} while it was read`));
          return;
        }
        this.position += length;
        this.push(bytes);
      },
      (err: Error) => this.destroy(err),
    );
  }
}

/**
 * Contents as chunk rows in the database (in cluster mode every node reads what any
 * node wrote, and no node's disk holds a content). An upload streams into a staged chunk set
 * (`blob_staging`, then rows of `blob_chunks`) while it is hashed and bounded; commit names it
 * by its sha256 in `blobs` inside the transaction that references it, or drops it when the same
 * content is stored already (dedup), so a rollback takes the name back with the reference and
 * discard then removes the chunks. Deleting is part of the transaction that dropped the last
 * reference too. Files a single-node install kept under `<data dir>/blobs` are read from
 * `legacy` until `switchboard blobs migrate` has moved them in.
 */
export class ChunkedBlobStore implements BlobStore {
  /**
   * `nodes`: the registry this node is part of; each staged chunk set records the node that
   * receives it, and the sweep drops those of nodes that are down at once instead of an hour
   * later (without it, as for the CLI, only the hour's rule applies).
   */
  constructor(
    private readonly store: BlobChunksStore,
    private readonly legacy: BlobStore | null = null,
    private readonly nodes: NodeRegistry | null = null,
  ) {}

  /** The chunks live in the database (its own check); files kept from a single-node install are read still. */
  async check(): Promise<void> {
    await this.legacy?.check();
  }

  async stage(input: Readable | Buffer, maxBytes: number, inlineMaxBytes = 0): Promise<StagedBlob> {
    const source = await holdInline(input, maxBytes, inlineMaxBytes);
    if (!(source instanceof Readable)) return source;
    const blobId = randomBytes(16).toString('hex');
    const discard = () => this.store.discardStaged(autocommit, blobId);
    const meter = new Meter(maxBytes);
    await this.store.beginStaging(autocommit, blobId, this.nodes?.nodeId ?? null, Date.now());
    try {
      await meterInto(source, meter, new ChunkSink(this.store, blobId));
    } catch (err) {
      await discard().catch(() => undefined);
      throw err;
    }
    const sha256 = meter.hash.digest('hex');
    const size = meter.size;
    const store = this.store;
    let committed = false;
    return {
      sha256,
      size,
      key: sha256,
      inline: null,
      get committed() {
        return committed;
      },
      async commit(tx: Tx) {
        committed = true;
        const outcome = await store.commitBlob(tx, {
          sha256,
          blob_id: blobId,
          size_bytes: size,
          chunk_bytes: CHUNK_BYTES,
          created_at: Date.now(),
        });
        if (outcome === 'swept') throw swept();
        if (outcome === 'duplicate') await store.deleteChunks(tx, blobId);
      },
      discard,
    };
  }

  /** Whether the database holds the content (not the legacy files). */
  async has(key: string): Promise<boolean> {
    return (await this.store.findBlob(autocommit, key)) !== undefined;
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const blob = await this.store.findBlob(autocommit, key);
    if (!blob) {
      if (this.legacy) return this.legacy.get(key, range);
      throw absent(key);
    }
    const size = Number(blob.size_bytes);
    return new ChunkReader(this.store, blob.blob_id, blob.chunk_bytes, range?.start ?? 0, range?.end ?? size - 1);
  }

  async delete(tx: Tx, key: string): Promise<void> {
    await this.store.deleteBlob(tx, key);
    await this.legacy?.delete(tx, key);
  }

  /**
   * Drops the chunk sets untouched for `olderThanMs` (a crashed upload's), and those of nodes
   * the registry does not list as up: a node killed mid-upload is down 30 s after its last
   * heartbeat (at once after a clean stop), and its half upload need not wait the hour.
   */
  async sweepStaging(olderThanMs: number): Promise<number> {
    const before = Date.now() - olderThanMs;
    let removed = await this.discardAll(() => this.store.takeStaleStaging(autocommit, before, SWEEP_BATCH));
    if (this.nodes) {
      const live = [this.nodes.nodeId, ...(await this.nodes.liveNodeIds())];
      removed += await this.discardAll(() => this.store.stagingOfNodesNotIn(autocommit, live, SWEEP_BATCH));
    }
    await this.legacy?.sweepStaging(olderThanMs);
    return removed;
  }

  /** Discards the chunk sets `next` names, batch after batch, until a batch is short; how many. */
  private async discardAll(next: () => Promise<string[]>): Promise<number> {
    let removed = 0;
    for (;;) {
      const batch = await next();
      for (const blobId of batch) await this.store.discardStaged(autocommit, blobId);
      removed += batch.length;
      if (batch.length < SWEEP_BATCH) return removed;
    }
  }

  async *storedBefore(olderThanMs: number): AsyncIterable<string> {
    const before = Date.now() - olderThanMs;
    let cursor = '';
    for (;;) {
      const keys = await this.store.blobsCreatedBefore(autocommit, before, cursor, LIST_BATCH);
      yield* keys;
      if (keys.length < LIST_BATCH) break;
      cursor = keys[keys.length - 1]!;
    }
    if (this.legacy) yield* this.legacy.storedBefore(olderThanMs);
  }
}
