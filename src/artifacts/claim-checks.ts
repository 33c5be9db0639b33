import { autocommit, type Tx } from '../kernel/tx.js';
import { NotFound } from '../kernel/errors.js';
import type { Clock } from '../kernel/clock.js';
import type { Readable } from 'node:stream';
import type { ClaimChecks, PayloadOwner, PayloadRef, SignedPayloadRef, StagedJson } from '../kernel/ports.js';
import type { ArtifactAccess } from './access.js';
import type { ArtifactEvents } from './artifact-events.js';
import { newArtifactRows } from './artifact-rows.js';
import type { StagedBlob } from './blob-store.js';
import type { ArtifactContents } from './contents.js';
import type { HoldsStore } from './holds-store.js';
import type { SignedUrls } from './signed-urls.js';
import type { ArtifactsStore } from './store.js';

/** The metadata key that marks an artifact as an offloaded payload: retention deletes only those. */
export const CLAIM_CHECK_KEY = 'claim_check';
const PAYLOAD_TYPE = 'application/json';
/** A reference's URL lives long enough for a receiver's lease and some retries. */
const URL_TTL_S = 3600;
/**
 * How long an offloaded artifact may wait for its message (or run) before retention deletes it
 * as an orphan: far longer than a send takes between its offload and its commit.
 */
export const OFFLOAD_GRACE_MS = 3600_000;

/**
 * Large payloads by reference: a payload's JSON text kept as an artifact of its sender,
 * shared with its receivers, held by the messages or runs that carry it. Its bytes are
 * content-addressed like every artifact's, so a payload sent to many is stored once.
 */
export class ClaimCheckArtifacts implements ClaimChecks {
  constructor(
    private readonly deps: {
      store: ArtifactsStore;
      holds: HoldsStore;
      clock: Clock;
      access: ArtifactAccess;
      contents: ArtifactContents;
      events: ArtifactEvents;
      urls: SignedUrls;
    },
  ) {}

  private ownerOf(owner: PayloadOwner): string {
    return owner.agentId ?? owner.actor;
  }

  async offload(owner: PayloadOwner, json: Buffer | StagedJson, readers: readonly string[]): Promise<PayloadRef> {
    // Staged JSON comes only from `stage` below: it is a StagedBlob.
    const staged = Buffer.isBuffer(json) ? await this.deps.contents.stage(json) : (json as StagedBlob);
    return this.deps.contents.settle(staged, () => this.deps.store.inTransaction((tx) => this.insert(tx, owner, staged, readers)));
  }

  stage(source: Readable): Promise<StagedJson> {
    return this.deps.contents.stage(source);
  }

  async offloadIn(tx: Tx, owner: PayloadOwner, json: Buffer, readers: readonly string[]): Promise<PayloadRef> {
    const staged = await this.deps.contents.stage(json);
    // A rollback of `tx` after this leaves a committed blob file unreferenced: the orphan sweep takes it.
    return this.deps.contents.settle(staged, () => this.insert(tx, owner, staged, readers));
  }

  private async insert(tx: Tx, owner: PayloadOwner, staged: StagedBlob, readers: readonly string[]): Promise<PayloadRef> {
    const now = this.deps.clock.now();
    const rows = newArtifactRows(
      {
        owner: this.ownerOf(owner),
        name: 'payload.json',
        content_type: PAYLOAD_TYPE,
        metadata: { [CLAIM_CHECK_KEY]: true },
        sha256: staged.sha256,
        size_bytes: staged.size,
      },
      owner.actor,
      now,
    );
    await this.deps.contents.keep(tx, staged);
    await this.deps.store.insertArtifact(tx, rows.artifact, rows.version);
    await this.deps.holds.insertOffload(tx, { artifact_id: rows.artifact.id, created_at: now });
    await this.share(tx, rows.artifact.id, readers, now);
    await this.deps.events.created(tx, rows.artifact, owner.actor);
    return { artifact_id: rows.artifact.id, version: 1, size_bytes: staged.size, sha256: staged.sha256 };
  }

  async adopt(owner: PayloadOwner, artifactId: string, readers: readonly string[]): Promise<PayloadRef> {
    const row = await this.deps.access.readableBy({ admin: owner.admin, owner: this.ownerOf(owner), agentId: owner.agentId }, artifactId);
    await this.share(autocommit, artifactId, readers, this.deps.clock.now());
    return { artifact_id: row.id, version: row.current_version, size_bytes: Number(row.size_bytes), sha256: row.sha256 };
  }

  private async share(tx: Tx, artifactId: string, readers: readonly string[], now: number): Promise<void> {
    await this.deps.store.addShares(
      tx,
      [...new Set(readers)].map((principal) => ({ artifact_id: artifactId, kind: 'agent' as const, principal, created_at: now })),
    );
  }

  async hold(tx: Tx, holds: readonly { artifact_id: string; holder: string }[]): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.holds.insertHolds(
      tx,
      holds.map((h) => ({ ...h, created_at: now })),
    );
  }

  /**
   * Deletes the claim-check artifacts the holders were the last to hold, with their blobs. An
   * artifact a sender made itself and sent by reference goes too when it is marked as a claim
   * check (the SDKs mark theirs); any other outlives its messages.
   */
  async release(holders: readonly string[]): Promise<number> {
    const { store, holds } = this.deps;
    const orphans = await holds.dropHolders(autocommit, holders);
    let deleted = 0;
    for (const id of orphans) {
      deleted += await store.inTransaction(async (tx) => {
        const artifact = await store.lockArtifact(tx, id);
        if (!artifact || (JSON.parse(artifact.metadata) as Record<string, unknown>)[CLAIM_CHECK_KEY] !== true) return 0;
        await this.deleteArtifact(tx, id);
        return 1;
      });
    }
    return deleted;
  }

  async read(tx: Tx, ref: PayloadRef): Promise<Buffer> {
    const version = await this.deps.store.findVersionContent(tx, ref.artifact_id, ref.version);
    if (!version) throw new NotFound(`Version ${ref.version} of artifact`, ref.artifact_id);
    return version.bytes ?? this.deps.contents.bytesOf(version.sha256);
  }

  async discard(artifactIds: readonly string[]): Promise<number> {
    let deleted = 0;
    for (const id of new Set(artifactIds)) deleted += await this.dropUnheld(id);
    return deleted;
  }

  /**
   * Retention of offloads: each made over the grace period ago is deleted if nothing holds it
   * (its send failed and was not discarded, or the server stopped in between), else forgotten
   * (its holders' release deletes it).
   */
  async sweepUnheld(now: number, limit: number): Promise<{ deleted: number; more: boolean }> {
    const ids = await this.deps.holds.offloadsBefore(autocommit, now - OFFLOAD_GRACE_MS, limit);
    let deleted = 0;
    for (const id of ids) deleted += await this.dropUnheld(id);
    return { deleted, more: ids.length === limit };
  }

  /** Deletes the artifact if the server offloaded it and nothing holds it; only an offload is ever deleted. */
  private async dropUnheld(id: string): Promise<number> {
    const { store, holds } = this.deps;
    return store.inTransaction(async (tx) => {
      // The artifact's lock first, as `release` takes it: a deleted artifact took its offload row with it.
      if (!(await store.lockArtifact(tx, id)) || !(await holds.takeOffload(tx, id)) || (await holds.isHeld(tx, id))) return 0;
      await this.deleteArtifact(tx, id);
      return 1;
    });
  }

  /** Deletes a locked artifact with its blobs no other artifact uses. */
  private async deleteArtifact(tx: Tx, id: string): Promise<void> {
    const { store, contents } = this.deps;
    const blobs = (await store.listVersions(tx, id)).map((v) => v.sha256);
    await store.deleteArtifact(tx, id);
    await store.lockBlobs(tx, blobs);
    await contents.dropUnreferenced(tx, blobs);
  }

  async sign(ref: PayloadRef): Promise<SignedPayloadRef> {
    const url = await this.deps.urls.downloadUrl(ref.artifact_id, ref.version, this.deps.urls.expiry(URL_TTL_S));
    return { artifact_id: ref.artifact_id, url, size_bytes: ref.size_bytes, sha256: ref.sha256 };
  }
}
