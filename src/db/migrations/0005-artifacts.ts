import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('artifacts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    // The version served by default, and the highest number ever given (numbers are never
    // reused, so a signed URL or cached ETag for version n always means the same bytes).
    .addColumn('current_version', 'integer', (c) => c.notNull())
    .addColumn('last_version', 'integer', (c) => c.notNull())
    // The current version's content, copied here so list filters are one indexed table scan.
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('artifacts_owner').on('artifacts').columns(['owner', 'id']).execute();
  await db.schema.createIndex('artifacts_content_type').on('artifacts').columns(['content_type', 'id']).execute();

  await db.schema
    .createTable('artifact_versions')
    .addColumn('artifact_id', 'text', (c) => c.notNull().references('artifacts.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    // Also the blob key: blobs are content-addressed and shared by every version with these bytes.
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('artifact_versions_pk', ['artifact_id', 'version'])
    .execute();
  // Reference counting of blobs: "is any version still using these bytes?"
  await db.schema.createIndex('artifact_versions_sha256').on('artifact_versions').column('sha256').execute();

  await db.schema
    .createTable('artifact_shares')
    .addColumn('artifact_id', 'text', (c) => c.notNull().references('artifacts.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('principal', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('artifact_shares_pk', ['artifact_id', 'kind', 'principal'])
    .execute();
  await db.schema.createIndex('artifact_shares_principal').on('artifact_shares').columns(['kind', 'principal', 'artifact_id']).execute();

  await db.schema
    .createTable('artifact_uploads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('sha256', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    // Set once bytes have been PUT: the blob they went to (a reference, like a version's).
    .addColumn('blob_sha256', 'text')
    .addColumn('received_bytes', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('artifact_uploads_expires').on('artifact_uploads').column('expires_at').execute();
  await db.schema.createIndex('artifact_uploads_blob').on('artifact_uploads').column('blob_sha256').execute();
}
