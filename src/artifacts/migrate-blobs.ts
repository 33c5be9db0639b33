import type { FsBlobStore } from './blob-store.js';
import type { ChunkedBlobStore } from './chunked-blob-store.js';
import type { ArtifactsStore } from './store.js';

export interface BlobMigration {
  /** Files copied into the database and removed. */
  moved: number;
  /** Files whose content the database held already (removed). */
  present: number;
  /** Files whose bytes do not hash to their name (left in place, named in `corrupt`). */
  corrupt: string[];
}

/**
 * `switchboard blobs migrate`: moves every content file of a data directory into the chunked
 * store, so a single-node PostgreSQL install can grow into a cluster. Each file is streamed in
 * (never read whole), its sha256 checked against its name, committed under the same lock every
 * reference change takes, and only then removed; a run that stops halfway is finished by the
 * next one. Safe beside running servers: until a file is moved they read it from the data
 * directory, and a content deleted meanwhile is left unreferenced for the orphan sweep.
 */
export async function migrateFileBlobs(deps: {
  files: FsBlobStore;
  chunks: ChunkedBlobStore;
  store: ArtifactsStore;
  onFile?: (key: string, outcome: 'moved' | 'present' | 'corrupt') => void;
}): Promise<BlobMigration> {
  const { files, chunks, store } = deps;
  const result: BlobMigration = { moved: 0, present: 0, corrupt: [] };
  for await (const key of files.stored()) {
    if (await chunks.has(key)) {
      await store.inTransaction((tx) => files.delete(tx, key));
      result.present++;
      deps.onFile?.(key, 'present');
      continue;
    }
    const staged = await chunks.stage(await files.get(key), Number.MAX_SAFE_INTEGER);
    if (staged.sha256 !== key) {
      await staged.discard();
      result.corrupt.push(key);
      deps.onFile?.(key, 'corrupt');
      continue;
    }
    try {
      await store.inTransaction(async (tx) => {
        await store.lockBlobs(tx, [key]);
        await staged.commit(tx);
        await files.delete(tx, key);
      });
    } finally {
      await staged.discard();
    }
    result.moved++;
    deps.onFile?.(key, 'moved');
  }
  return result;
}
