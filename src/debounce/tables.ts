/** What a burst starts: a plan trigger's run or a webhook routine's execution. */
export type DebounceOwnerKind = 'trigger' | 'routine';

/** A debounced burst under way: one per owner and debounce key, holding the last event. */
export interface DebouncesTable {
  owner_kind: DebounceOwnerKind;
  owner_id: string;
  debounce_key: string;
  /** JSON: the last event's data, what the run or execution starts with. */
  event: string;
  first_at: number;
  /** When the burst fires: `seconds` after the last event, at the deadline at most. */
  fire_at: number;
  /** The first event plus `max_wait_s` (null: none). */
  deadline: number | null;
}

/** The debounce tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface DebounceTables {
  debounces: DebouncesTable;
}
