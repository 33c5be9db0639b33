import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { Logger } from 'pino';
import { autocommit, type Tx } from '../kernel/tx.js';
import type { BlobStore, StagedBlob } from './blob-store.js';
import type { ArtifactsStore } from './store.js';

/** Blob keys looked up per query by the orphan sweep. */
const ORPHAN_BATCH = 100;
/** Staging files untouched this long were left by a crash (a live upload writes continuously). */
const STAGING_TTL_MS = 3600_000;
/**
 * A blob file untouched for less than this is never taken for an orphan: the transaction that
 * renamed it into place may still be open (the lock each delete takes covers that already;
 * this is a margin on top of it, for a rename that takes milliseconds).
 */
const ORPHAN_GRACE_MS = 10 * 60_000;

/**
 * Where artifacts' bytes are kept, and when they are deleted. Every content is keyed by its
 * sha256 and kept while a version or an upload references it: small ones as database rows, the
 * rest in the blob store. Whatever adds or drops a reference holds the content's lock
 * (store.lockBlobs) until its transaction ends, so no reference is added between a count and
 * a delete.
 */
export class ArtifactContents {
  constructor(
    private readonly deps: {
      store: ArtifactsStore;
      blobs: BlobStore;
      logger: Logger;
      maxUploadBytes: number;
      /** Contents of at most this many bytes are kept in the database, larger ones in the blob store. */
      inlineMaxBytes: number;
    },
  ) {}

  private get store(): ArtifactsStore {
    return this.deps.store;
  }

  /**
   * Streams an upload to the staging area: held in memory while it fits the inline limit, else
   * spilled to a staging file (bounded by `maxBytes` either way: 413, nothing left behind).
   */
  stage(source: Readable | Buffer, maxBytes = this.deps.maxUploadBytes): Promise<StagedBlob> {
    return this.deps.blobs.stage(source, maxBytes, this.deps.inlineMaxBytes);
  }

  /**
   * Stores staged bytes under their sha256 inside `tx`, which holds their lock
   * (store.lockBlobs) and adds the reference: a small content as a database row, which the
   * transaction commits or rolls back with the reference; a large one by committing its file.
   */
  async keep(tx: Tx, staged: StagedBlob): Promise<void> {
    await this.store.lockBlobs(tx, [staged.key]);
    if (staged.inline) await this.store.insertContent(tx, staged.key, staged.inline);
    else await staged.commit(tx);
  }

  /**
   * Deletes the contents no version or upload references any more, wherever they are kept (a
   * content may be in both places: a row and a file made while the inline limit was lower).
   * Call inside the transaction that dropped the references, holding their locks
   * (store.lockBlobs), so no writer can add a reference between the count and the delete.
   */
  async dropUnreferenced(tx: Tx, sha256s: Iterable<string>): Promise<number> {
    let dropped = 0;
    for (const sha of new Set(sha256s)) {
      if ((await this.store.blobReferences(tx, sha)) > 0) continue;
      await this.store.deleteContent(tx, sha);
      await this.deps.blobs.delete(tx, sha);
      dropped++;
    }
    return dropped;
  }

  /**
   * Runs `work`, which commits `staged` inside its transaction. If it fails, the staged bytes are
   * removed, and, when the commit ran but its transaction did not, the blob is deleted unless
   * something else references it (a file renamed into place stays there through a rollback).
   */
  async settle<T>(staged: StagedBlob, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (staged.committed) {
        await this.store
          .inTransaction(async (tx) => {
            await this.store.lockBlobs(tx, [staged.key]);
            await this.dropUnreferenced(tx, [staged.key]);
          })
          .catch((cleanupErr: unknown) => this.deps.logger.error({ err: cleanupErr, blob: staged.key }, 'could not release a blob'));
      }
      await staged
        .discard()
        .catch((cleanupErr: unknown) => this.deps.logger.error({ err: cleanupErr, blob: staged.key }, 'could not discard staged bytes'));
      throw err;
    }
  }

  /** The bytes of a content kept in the blob store, read whole. */
  async bytesOf(sha256: string): Promise<Buffer> {
    return buffer(await this.deps.blobs.get(sha256));
  }

  /** Removes the staging files a crash left behind. */
  async sweepStaging(): Promise<void> {
    await this.deps.blobs.sweepStaging(STAGING_TTL_MS);
  }

  /**
   * Deletes the blob files no version or upload references. A crash between a file's rename
   * into place and the commit of the transaction that references it leaves one (seen on
   * PostgreSQL after SIGKILLs under load). Only files untouched for the grace period are
   * looked at, and each is deleted under its lock after its references are counted again, as
   * every delete is, so an upload in flight keeps its file. Stops between batches once `signal`
   * is aborted (a shutdown does not wait for a pass over every file).
   */
  async sweepOrphanBlobs(signal?: AbortSignal): Promise<number> {
    let swept = 0;
    let batch: string[] = [];
    const sweepBatch = async () => {
      const referenced = await this.store.referencedBlobs(autocommit, batch);
      for (const sha of batch.filter((key) => !referenced.has(key))) {
        swept += await this.store.inTransaction(async (tx) => {
          await this.store.lockBlobs(tx, [sha]);
          return this.dropUnreferenced(tx, [sha]);
        });
      }
      batch = [];
    };
    for await (const sha of this.deps.blobs.storedBefore(ORPHAN_GRACE_MS)) {
      batch.push(sha);
      if (batch.length < ORPHAN_BATCH) continue;
      await sweepBatch();
      if (signal?.aborted) break;
    }
    await sweepBatch();
    if (swept > 0) this.deps.logger.info({ blobs: swept }, 'deleted blob files that nothing referenced');
    return swept;
  }
}
