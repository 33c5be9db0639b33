import type { Generated } from 'kysely';

export interface EventsTable {
  /** Log position: commit order (see EventsStore.append); the event id is made from it. */
  seq: Generated<number>;
  type: string;
  subject: string;
  actor: string;
  /** JSON object. */
  data: string;
  reason: string | null;
  /** JSON array of `agent:<id>` and `group:<name>` who may read it besides admins; null: everyone. */
  readers: string | null;
  created_at: number;
}

/** The events tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface EventsTables {
  events: EventsTable;
}
