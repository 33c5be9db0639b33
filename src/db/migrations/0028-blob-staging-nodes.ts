import type { Kysely } from 'kysely';

/**
 * `blob_staging.node_id`: the node receiving an upload, so the chunks of an upload whose node
 * died are swept once the registry says it is down, not an hour later. Rows staged before it
 * keep null, and the hour's rule.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('blob_staging').addColumn('node_id', 'text').execute();
}
