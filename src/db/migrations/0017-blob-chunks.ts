import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Artifact contents in the database, in chunks: on PostgreSQL every node reads what
 * any node wrote. Created on SQLite too (one schema for both), where the file store stays the
 * default and these tables stay empty. See artifacts/tables.ts for the three tables.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('blob_chunks')
    .addColumn('blob_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('bytes', caps.bytesType, (c) => c.notNull())
    .addPrimaryKeyConstraint('blob_chunks_pk', ['blob_id', 'seq'])
    .execute();
  // Out of line without compression: uploads are mostly compressed already (archives, images),
  // so trying costs CPU for nothing, and an uncompressed value lets substr() (a range) read only
  // the TOAST pieces it needs instead of decompressing the whole chunk.
  if (caps.kind === 'postgres') await sql`ALTER TABLE blob_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL`.execute(db);
  await db.schema
    .createTable('blobs')
    .addColumn('sha256', 'text', (c) => c.primaryKey())
    .addColumn('blob_id', 'text', (c) => c.notNull().unique())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('chunk_bytes', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blobs_created_at').on('blobs').column('created_at').execute();
  await db.schema
    .createTable('blob_staging')
    .addColumn('blob_id', 'text', (c) => c.primaryKey())
    .addColumn('touched_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blob_staging_touched_at').on('blob_staging').column('touched_at').execute();
}
