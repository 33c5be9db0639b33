import type { Kysely } from 'kysely';

/** The retention worker runs on the cluster's leader, as the alert evaluator does: its lease table goes. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('worker_leases').ifExists().execute();
}
