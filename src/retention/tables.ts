/** A lease that keeps a cluster-wide job on one node at a time: who holds it, until when. */
export interface WorkerLeasesTable {
  name: string;
  holder: string;
  expires_at: number;
}

/** The retention tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface RetentionTables {
  worker_leases: WorkerLeasesTable;
}
