import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * The artifacts the server made by offloading a payload (`artifact_offloads`), until retention
 * has seen each held by a message or run: one nothing holds after a grace period (its send
 * failed, or the server stopped in between) is deleted. Artifacts a user uploaded are never here.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('artifact_offloads')
    .addColumn('artifact_id', 'text', (c) => c.primaryKey().references('artifacts.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('artifact_offloads_created').on('artifact_offloads').columns(['created_at']).execute();
}
