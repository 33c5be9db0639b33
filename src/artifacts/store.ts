import { sql, type Selectable } from 'kysely';
import { BulkInsert } from '../db/bulk-insert.js';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import { ArtifactListingStore } from './listing-store.js';
import type { ArtifactsTable, ArtifactVersionsTable, ArtifactSharesTable, ArtifactContentsTable, BlobsTable } from './tables.js';
import { HoldsStore } from './holds-store.js';
import { UploadsStore } from './uploads-store.js';

export type ArtifactRow = Selectable<ArtifactsTable>;
export type VersionRow = Selectable<ArtifactVersionsTable>;
export type ShareRow = Selectable<ArtifactSharesTable>;
/** A version with its bytes when they are kept in the database (null: they are in the blob store). */
export type VersionContentRow = VersionRow & { bytes: Buffer | null };

/** The content of a new current version, as copied onto the artifact row. */
export type CurrentContent = Pick<ArtifactRow, 'content_type' | 'size_bytes' | 'sha256' | 'updated_at'>;

type ContentRow = Selectable<ArtifactContentsTable>;

const ARTIFACT_TEMPLATE: Record<keyof ArtifactRow, null> = {
  id: null,
  name: null,
  owner: null,
  metadata: null,
  current_version: null,
  last_version: null,
  content_type: null,
  size_bytes: null,
  sha256: null,
  created_at: null,
  updated_at: null,
};

const VERSION_TEMPLATE: Record<keyof VersionRow, null> = {
  artifact_id: null,
  version: null,
  content_type: null,
  size_bytes: null,
  sha256: null,
  created_by: null,
  created_at: null,
};

const CONTENT_TEMPLATE: Record<keyof ContentRow, null> = { sha256: null, bytes: null };

export class ArtifactsStore extends Store {
  // The inserts of a create, compiled once: building and compiling them with the query builder
  // on every create took ~50 µs of the ~165 µs of its transaction on SQLite (measured).
  private readonly artifactInsert: BulkInsert<'artifacts', keyof ArtifactRow>;
  private readonly versionInsert: BulkInsert<'artifact_versions', keyof VersionRow>;
  private readonly contentInsert: BulkInsert<'artifact_contents', keyof ContentRow>;
  /** Listing artifacts: who sees which, and the content type and metadata filters. */
  readonly listing: ArtifactListingStore;
  /** Upload intents, until confirmed or swept. */
  readonly uploads: UploadsStore;
  /** Which messages and runs carry which offloaded payloads. */
  readonly holds: HoldsStore;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.listing = new ArtifactListingStore(db, caps);
    this.uploads = new UploadsStore(db, caps);
    this.holds = new HoldsStore(db, caps);
    this.artifactInsert = new BulkInsert(db, 'artifacts', ARTIFACT_TEMPLATE);
    this.versionInsert = new BulkInsert(db, 'artifact_versions', VERSION_TEMPLATE);
    this.contentInsert = new BulkInsert(db, 'artifact_contents', CONTENT_TEMPLATE, {
      clauses: (insert) => insert.onConflict((oc) => oc.column('sha256').doNothing()),
    });
  }

  /**
   * Serializes everything that adds or drops references to these blobs, and the file
   * operations done under it (commit's rename, the last reference's unlink), until the
   * transaction ends. Taken after any artifact row lock, in sorted order, so it cannot deadlock.
   */
  async lockBlobs(tx: Tx, sha256s: Iterable<string>): Promise<void> {
    const db = dbOf(tx, this.db);
    for (const sha of [...new Set(sha256s)].sort()) await this.caps.transactionLock(db, `artifact-blob:${sha}`);
  }

  /** Keeps a content in the database; the same bytes stored already are left as they are. */
  async insertContent(tx: Tx, sha256: string, bytes: Buffer): Promise<void> {
    await this.contentInsert.run(dbOf(tx, this.db), [{ sha256, bytes }]);
  }

  async deleteContent(tx: Tx, sha256: string): Promise<void> {
    await dbOf(tx, this.db).deleteFrom('artifact_contents').where('sha256', '=', sha256).execute();
  }

  /** How many versions and pending uploads still use these bytes. */
  async blobReferences(tx: Tx, sha256: string): Promise<number> {
    const row = await dbOf(tx, this.db)
      .selectNoFrom((eb) => [
        eb.selectFrom('artifact_versions').select(eb.fn.countAll<number>().as('n')).where('sha256', '=', sha256).as('versions'),
        eb.selectFrom('artifact_uploads').select(eb.fn.countAll<number>().as('n')).where('blob_sha256', '=', sha256).as('uploads'),
      ])
      .executeTakeFirstOrThrow();
    return Number(row.versions) + Number(row.uploads);
  }

  /** Which of these contents a version or a pending upload references. */
  async referencedBlobs(tx: Tx, sha256s: string[]): Promise<Set<string>> {
    const db = dbOf(tx, this.db);
    if (sha256s.length === 0) return new Set();
    const [versions, uploads] = await Promise.all([
      db.selectFrom('artifact_versions').select('sha256').distinct().where(this.caps.inTextList('sha256', sha256s)).execute(),
      db.selectFrom('artifact_uploads').select('blob_sha256').distinct().where(this.caps.inTextList('blob_sha256', sha256s)).execute(),
    ]);
    return new Set([...versions.map((r) => r.sha256), ...uploads.map((r) => r.blob_sha256 ?? '')]);
  }

  // ---- artifacts and versions ----

  async insertArtifact(tx: Tx, artifact: ArtifactRow, version: VersionRow): Promise<void> {
    const db = dbOf(tx, this.db);
    await this.artifactInsert.run(db, [artifact]);
    await this.versionInsert.run(db, [version]);
  }

  async findArtifact(tx: Tx, id: string): Promise<ArtifactRow | undefined> {
    return dbOf(tx, this.db).selectFrom('artifacts').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Makes a new current version number (never reused) and records its content on the artifact,
   * in one UPDATE that also row-locks it, so concurrent writers get distinct numbers. With
   * `ifMatch`, only when the current content still has one of those sha256s (compare-and-set).
   */
  async advanceVersion(
    tx: Tx,
    id: string,
    content: CurrentContent & Partial<Pick<ArtifactRow, 'name' | 'metadata'>>,
    ifMatch?: string[],
  ): Promise<ArtifactRow | undefined> {
    let query = dbOf(tx, this.db)
      .updateTable('artifacts')
      .set((eb) => ({
        ...content,
        last_version: eb('last_version', '+', 1),
        current_version: eb('last_version', '+', 1),
      }))
      .where('id', '=', id);
    if (ifMatch !== undefined) query = query.where('sha256', 'in', ifMatch);
    return query.returningAll().executeTakeFirst();
  }

  async insertVersion(tx: Tx, row: VersionRow): Promise<void> {
    await this.versionInsert.run(dbOf(tx, this.db), [row]);
  }

  /** Row-locks the artifact for the rest of the transaction (an UPDATE does it on both dialects). */
  async lockArtifact(tx: Tx, id: string): Promise<ArtifactRow | undefined> {
    return dbOf(tx, this.db)
      .updateTable('artifacts')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  }

  async setCurrent(tx: Tx, id: string, version: VersionRow, at: number): Promise<void> {
    await dbOf(tx, this.db)
      .updateTable('artifacts')
      .set({
        current_version: version.version,
        content_type: version.content_type,
        size_bytes: version.size_bytes,
        sha256: version.sha256,
        updated_at: at,
      })
      .where('id', '=', id)
      .execute();
  }

  async listVersions(tx: Tx, id: string): Promise<VersionRow[]> {
    return dbOf(tx, this.db).selectFrom('artifact_versions').selectAll().where('artifact_id', '=', id).orderBy('version', 'desc').execute();
  }

  async findVersion(tx: Tx, id: string, version: number): Promise<VersionRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('artifact_versions')
      .selectAll()
      .where('artifact_id', '=', id)
      .where('version', '=', version)
      .executeTakeFirst();
  }

  /** The version with its bytes, if the database holds them: one snapshot, so they cannot vanish in between. */
  async findVersionContent(tx: Tx, id: string, version: number): Promise<VersionContentRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('artifact_versions')
      .leftJoin('artifact_contents', 'artifact_contents.sha256', 'artifact_versions.sha256')
      .selectAll('artifact_versions')
      .select('artifact_contents.bytes')
      .where('artifact_versions.artifact_id', '=', id)
      .where('artifact_versions.version', '=', version)
      .executeTakeFirst();
  }

  async deleteVersion(tx: Tx, id: string, version: number): Promise<VersionRow | undefined> {
    return dbOf(tx, this.db)
      .deleteFrom('artifact_versions')
      .where('artifact_id', '=', id)
      .where('version', '=', version)
      .returningAll()
      .executeTakeFirst();
  }

  /** Deletes the artifact with its versions and shares (cascade). */
  async deleteArtifact(tx: Tx, id: string): Promise<void> {
    await dbOf(tx, this.db).deleteFrom('artifacts').where('id', '=', id).execute();
  }

  // ---- sharing ----

  async listShares(tx: Tx, id: string): Promise<ShareRow[]> {
    return dbOf(tx, this.db).selectFrom('artifact_shares').selectAll().where('artifact_id', '=', id).orderBy('principal').execute();
  }

  async addShares(tx: Tx, rows: ShareRow[]): Promise<void> {
    if (rows.length === 0) return;
    await dbOf(tx, this.db)
      .insertInto('artifact_shares')
      .values(rows)
      .onConflict((oc) => oc.columns(['artifact_id', 'kind', 'principal']).doNothing())
      .execute();
  }

  async removeShares(tx: Tx, id: string, kind: 'agent' | 'group', principals: string[]): Promise<void> {
    if (principals.length === 0) return;
    await dbOf(tx, this.db)
      .deleteFrom('artifact_shares')
      .where('artifact_id', '=', id)
      .where('kind', '=', kind)
      .where('principal', 'in', principals)
      .execute();
  }
}

export type BlobRow = Selectable<BlobsTable>;

/**
 * The SQL of the chunked blob store (artifacts/chunked-blob-store.ts): contents as 1 MiB rows
 * of `blob_chunks` under a `blob_id`, named by their sha256 in `blobs` once committed.
 */
export class BlobChunksStore extends Store {
  /** Starts a staged chunk set written by `nodeId` (null: not a node of the registry, such as the CLI). */
  async beginStaging(tx: Tx, blobId: string, nodeId: string | null, now: number): Promise<void> {
    await dbOf(tx, this.db).insertInto('blob_staging').values({ blob_id: blobId, node_id: nodeId, touched_at: now }).execute();
  }

  /**
   * One chunk of a staged content, after the staging row's touch (an upload still arriving is
   * not swept). False, and no chunk written, when the staging row is gone (swept): call in a
   * transaction, so that the touch's row lock keeps a sweep from deleting the row in between.
   */
  async appendChunk(tx: Tx, blobId: string, seq: number, bytes: Buffer, now: number): Promise<boolean> {
    const db = dbOf(tx, this.db);
    const touched = await db.updateTable('blob_staging').set({ touched_at: now }).where('blob_id', '=', blobId).executeTakeFirst();
    if (Number(touched.numUpdatedRows) === 0) return false;
    await db.insertInto('blob_chunks').values({ blob_id: blobId, seq, bytes }).execute();
    return true;
  }

  /**
   * Ends a chunk set's staging and names it by its content's sha256: 'stored', or 'duplicate'
   * when the same content is stored already (the caller drops the staged chunks instead), or
   * 'swept' when its staging row is gone, and with it its chunks (nothing is named then).
   */
  async commitBlob(tx: Tx, row: BlobRow): Promise<'stored' | 'duplicate' | 'swept'> {
    const db = dbOf(tx, this.db);
    const staged = await db.deleteFrom('blob_staging').where('blob_id', '=', row.blob_id).executeTakeFirst();
    if (Number(staged.numDeletedRows) === 0) return 'swept';
    const inserted = await db
      .insertInto('blobs')
      .values(row)
      .onConflict((oc) => oc.column('sha256').doNothing())
      .returning('sha256')
      .executeTakeFirst();
    return inserted === undefined ? 'duplicate' : 'stored';
  }

  async findBlob(tx: Tx, sha256: string): Promise<BlobRow | undefined> {
    return dbOf(tx, this.db).selectFrom('blobs').selectAll().where('sha256', '=', sha256).executeTakeFirst();
  }

  /** `length` bytes of one chunk from `offset` (0-based); undefined when the chunk is gone. */
  async readChunk(tx: Tx, blobId: string, seq: number, offset: number, length: number): Promise<Buffer | undefined> {
    const row = await dbOf(tx, this.db)
      .selectFrom('blob_chunks')
      .select(sql<Buffer>`substr(bytes, ${offset + 1}, ${length})`.as('bytes'))
      .where('blob_id', '=', blobId)
      .where('seq', '=', seq)
      .executeTakeFirst();
    return row?.bytes;
  }

  /** Deletes a committed content (its name and its chunks); false when there was none. */
  async deleteBlob(tx: Tx, sha256: string): Promise<boolean> {
    const db = dbOf(tx, this.db);
    const row = await db.deleteFrom('blobs').where('sha256', '=', sha256).returning('blob_id').executeTakeFirst();
    if (!row) return false;
    await db.deleteFrom('blob_chunks').where('blob_id', '=', row.blob_id).execute();
    return true;
  }

  async deleteChunks(tx: Tx, blobId: string): Promise<void> {
    await dbOf(tx, this.db).deleteFrom('blob_chunks').where('blob_id', '=', blobId).execute();
  }

  /** Drops what is left of a staged chunk set, unless it was committed under a name (then it is a content). */
  async discardStaged(tx: Tx, blobId: string): Promise<void> {
    const db = dbOf(tx, this.db);
    await db.deleteFrom('blob_staging').where('blob_id', '=', blobId).execute();
    await db
      .deleteFrom('blob_chunks')
      .where('blob_id', '=', blobId)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('blobs').select('blob_id').where('blobs.blob_id', '=', blobId))))
      .execute();
  }

  /** Ends the staging of chunk sets untouched since `before` (a crashed upload's); returns their ids. */
  async takeStaleStaging(tx: Tx, before: number, limit: number): Promise<string[]> {
    const db = dbOf(tx, this.db);
    const rows = await db
      .selectFrom('blob_staging')
      .select('blob_id')
      .where('touched_at', '<', before)
      .orderBy('touched_at')
      .limit(limit)
      .execute();
    return rows.map((r) => r.blob_id);
  }

  /** Chunk sets staged by nodes other than `liveNodeIds` (down, or gone from the registry). */
  async stagingOfNodesNotIn(tx: Tx, liveNodeIds: string[], limit: number): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('blob_staging')
      .select('blob_id')
      .where('node_id', 'is not', null)
      .where((eb) => eb.not(this.caps.inTextList('node_id', liveNodeIds)))
      .limit(limit)
      .execute();
    return rows.map((r) => r.blob_id);
  }

  /** sha256s of contents committed before `before`, after `cursor` in sha256 order. */
  async blobsCreatedBefore(tx: Tx, before: number, cursor: string, limit: number): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('blobs')
      .select('sha256')
      .where('created_at', '<', before)
      .where('sha256', '>', cursor)
      .orderBy('sha256')
      .limit(limit)
      .execute();
    return rows.map((r) => r.sha256);
  }
}
