import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Small artifact contents kept in the database instead of one file each, so creating a few-KiB
 * artifact costs no file writes. Content-addressed like the blob files: one row per sha256,
 * shared by every version and upload with those bytes and counted the same way
 * (artifact_versions.sha256 and artifact_uploads.blob_sha256). A content is read from here when
 * its row exists, else from the blob file, so contents stored before this migration keep
 * working unchanged.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('artifact_contents')
    .addColumn('sha256', 'text', (c) => c.primaryKey())
    .addColumn('bytes', caps.bytesType, (c) => c.notNull())
    .execute();
}
