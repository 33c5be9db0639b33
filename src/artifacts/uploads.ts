import type { Readable } from 'node:stream';
import { actsForPlatform, type Principal } from '../auth/index.js';
import { autocommit } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, NotFound, PayloadTooLarge } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { ArtifactAccess } from './access.js';
import type { ArtifactEvents } from './artifact-events.js';
import { newArtifactRows, toArtifact } from './artifact-rows.js';
import type { ArtifactContents } from './contents.js';
import type { Artifact, UploadIntentBody } from './schemas.js';
import type { SignedUrls, UrlProof } from './signed-urls.js';
import type { ArtifactRow, ArtifactsStore } from './store.js';
import type { UploadRow } from './uploads-store.js';

/** Expired uploads deleted per transaction by the sweep. */
const EXPIRED_BATCH = 100;

/**
 * Upload intents: an artifact whose bytes come without credentials. The owner declares the
 * upload and gets an upload URL; the bytes are PUT to it (streamed, at most the declared size)
 * and kept while the upload references them; a confirm makes the artifact when they match the
 * declared size and sha256. Uploads never confirmed are swept once they expire.
 */
export class UploadIntents {
  constructor(
    private readonly deps: {
      store: ArtifactsStore;
      clock: Clock;
      maxUploadBytes: number;
      access: ArtifactAccess;
      contents: ArtifactContents;
      events: ArtifactEvents;
      urls: SignedUrls;
    },
  ) {}

  private get store(): ArtifactsStore {
    return this.deps.store;
  }

  async create(principal: Principal, body: UploadIntentBody): Promise<{ upload_id: string; url: string; expires_at: string }> {
    if (body.size_bytes > this.deps.maxUploadBytes) {
      throw new PayloadTooLarge(`size_bytes exceeds the upload limit of ${this.deps.maxUploadBytes} bytes`);
    }
    const now = this.deps.clock.now();
    const expires = this.deps.urls.expiry(body.expires_in ?? 3600);
    const row: UploadRow = {
      id: newId('upl', now),
      owner: this.deps.access.ownerOf(principal),
      name: body.name,
      content_type: body.content_type,
      metadata: JSON.stringify(body.metadata ?? {}),
      size_bytes: body.size_bytes,
      sha256: body.sha256?.toLowerCase() ?? null,
      expires_at: expires * 1000,
      blob_sha256: null,
      received_bytes: null,
      created_at: now,
    };
    await this.store.uploads.insertUpload(autocommit, row);
    const url = await this.deps.urls.uploadUrl(row.id, expires);
    return { upload_id: row.id, url, expires_at: iso(row.expires_at) };
  }

  /**
   * The PUT to an upload URL: streams the bytes (at most the declared size) to a blob the upload
   * references until it is confirmed or swept. A second PUT replaces the first one's bytes.
   */
  async receive(
    uploadId: string,
    proof: UrlProof,
    body: Readable,
    contentLength?: number,
  ): Promise<{ upload_id: string; size_bytes: number; sha256: string }> {
    await this.deps.urls.checkUpload(uploadId, proof);
    const upload = await this.store.uploads.findUpload(autocommit, uploadId);
    if (!upload) throw new NotFound('Upload', uploadId);
    const limit = Math.min(this.deps.maxUploadBytes, Number(upload.size_bytes));
    if (contentLength !== undefined && contentLength > limit) {
      throw new PayloadTooLarge(`The upload declared ${upload.size_bytes} bytes; this body has ${contentLength}`);
    }
    const { contents } = this.deps;
    const staged = await contents.stage(body, limit);
    return contents.settle(staged, async () => {
      await this.store.inTransaction(async (tx) => {
        const before = await this.store.uploads.lockUpload(tx, uploadId);
        if (!before) throw new NotFound('Upload', uploadId);
        const previous = before.blob_sha256;
        // Both locks at once, in sorted order (store.lockBlobs), so two replacements cannot deadlock.
        if (previous !== null) await this.store.lockBlobs(tx, [staged.key, previous]);
        await contents.keep(tx, staged);
        await this.store.uploads.recordUploadBytes(tx, uploadId, staged.sha256, staged.size);
        if (previous !== null && previous !== staged.key) await contents.dropUnreferenced(tx, [previous]);
      });
      return { upload_id: uploadId, size_bytes: staged.size, sha256: staged.sha256 };
    });
  }

  /** Creates the artifact from the uploaded bytes if they match the declared size (and sha256); else 409, bytes discarded. */
  async confirm(principal: Principal, uploadId: string): Promise<Artifact> {
    const outcome = await this.store.inTransaction(
      async (tx): Promise<{ artifact: ArtifactRow } | { problems: { field: string; message: string }[] }> => {
        const upload = await this.store.uploads.lockUpload(tx, uploadId);
        if (!upload) throw new NotFound('Upload', uploadId);
        if (!actsForPlatform(principal) && upload.owner !== this.deps.access.ownerOf(principal)) {
          throw new Forbidden(`Upload '${uploadId}' belongs to '${upload.owner}'`);
        }
        if (upload.expires_at <= this.deps.clock.now()) throw new Conflict(`Upload '${uploadId}' has expired`);
        const blob = upload.blob_sha256;
        if (blob === null) throw new Conflict('No bytes have been uploaded yet: PUT them to the upload URL first');
        await this.store.lockBlobs(tx, [blob]);
        await this.store.uploads.deleteUpload(tx, uploadId);
        const problems: { field: string; message: string }[] = [];
        if (Number(upload.received_bytes) !== Number(upload.size_bytes)) {
          problems.push({ field: 'size_bytes', message: `declared ${upload.size_bytes}, received ${upload.received_bytes}` });
        }
        if (upload.sha256 !== null && upload.sha256 !== blob) {
          problems.push({ field: 'sha256', message: `declared ${upload.sha256}, received ${blob}` });
        }
        if (problems.length > 0) {
          await this.deps.contents.dropUnreferenced(tx, [blob]);
          return { problems };
        }
        const rows = newArtifactRows(
          {
            owner: upload.owner,
            name: upload.name,
            content_type: upload.content_type,
            metadata: JSON.parse(upload.metadata) as Record<string, unknown>,
            sha256: blob,
            size_bytes: Number(upload.received_bytes),
          },
          principal.actor,
          this.deps.clock.now(),
        );
        await this.store.insertArtifact(tx, rows.artifact, rows.version);
        await this.deps.events.created(tx, rows.artifact, principal.actor);
        return { artifact: rows.artifact };
      },
    );
    if ('problems' in outcome) {
      throw new Conflict('The uploaded bytes do not match the upload declaration; they have been discarded', outcome.problems);
    }
    return toArtifact(outcome.artifact);
  }

  /** Removes expired uploads and the bytes only they referenced; returns how many. */
  async sweepExpired(): Promise<number> {
    const now = this.deps.clock.now();
    let swept = 0;
    for (;;) {
      const n = await this.store.inTransaction(async (tx) => {
        const expired = await this.store.uploads.claimExpiredUploads(tx, now, EXPIRED_BATCH);
        const blobs = expired.map((u) => u.blob_sha256).filter((b): b is string => b !== null);
        await this.store.lockBlobs(tx, blobs);
        await this.deps.contents.dropUnreferenced(tx, blobs);
        return expired.length;
      });
      swept += n;
      if (n < EXPIRED_BATCH) break;
    }
    return swept;
  }
}
