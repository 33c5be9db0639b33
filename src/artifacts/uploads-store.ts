import type { Selectable } from 'kysely';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { ArtifactUploadsTable } from './tables.js';

export type UploadRow = Selectable<ArtifactUploadsTable>;

/**
 * The SQL of upload intents: an upload declared, its bytes recorded as they arrive, locked while
 * it is confirmed, and swept once expired. Its bytes' references are counted with the versions'
 * (ArtifactsStore.blobReferences).
 */
export class UploadsStore extends Store {
  async insertUpload(tx: Tx, row: UploadRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('artifact_uploads').values(row).execute();
  }

  async findUpload(tx: Tx, id: string): Promise<UploadRow | undefined> {
    return dbOf(tx, this.db).selectFrom('artifact_uploads').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Records received bytes; returns the row as it was before (its previous blob, if any), locked. */
  async recordUploadBytes(tx: Tx, id: string, sha256: string, size: number): Promise<UploadRow | undefined> {
    const before = await this.lockUpload(tx, id);
    if (!before) return undefined;
    await dbOf(tx, this.db)
      .updateTable('artifact_uploads')
      .set({ blob_sha256: sha256, received_bytes: size })
      .where('id', '=', id)
      .execute();
    return before;
  }

  /** Reads the upload and row-locks it (an UPDATE that changes nothing), so one confirm wins. */
  async lockUpload(tx: Tx, id: string): Promise<UploadRow | undefined> {
    return dbOf(tx, this.db)
      .updateTable('artifact_uploads')
      .set((eb) => ({ expires_at: eb.ref('expires_at') }))
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  }

  async deleteUpload(tx: Tx, id: string): Promise<void> {
    await dbOf(tx, this.db).deleteFrom('artifact_uploads').where('id', '=', id).execute();
  }

  /**
   * Claims and deletes up to `limit` uploads that expired before `now`, returning them. On
   * PostgreSQL rows another node is sweeping are skipped rather than waited for.
   */
  async claimExpiredUploads(tx: Tx, now: number, limit: number): Promise<UploadRow[]> {
    const db = dbOf(tx, this.db);
    const due = this.caps.claim(
      db.selectFrom('artifact_uploads').select('id').where('expires_at', '<', now).orderBy('expires_at').limit(limit),
    );
    return db.deleteFrom('artifact_uploads').where('id', 'in', due).returningAll().execute();
  }
}
