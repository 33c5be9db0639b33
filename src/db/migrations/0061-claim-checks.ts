import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Large payloads by reference: a message's offloaded payload and output (`payload_ref`,
 * `output_ref`: JSON `{artifact_id, version, size_bytes, sha256}`), and who holds each
 * offloaded artifact (`artifact_holds`: a message or a run), so retention deletes the artifact
 * once the last of its holders is gone.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.alterTable('messages').addColumn('payload_ref', 'text').execute();
  await db.schema.alterTable('messages').addColumn('output_ref', 'text').execute();
  await db.schema
    .createTable('artifact_holds')
    .addColumn('artifact_id', 'text', (c) => c.notNull())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('artifact_holds_pk', ['artifact_id', 'holder'])
    .execute();
  await db.schema.createIndex('artifact_holds_holder').on('artifact_holds').columns(['holder']).execute();
}
