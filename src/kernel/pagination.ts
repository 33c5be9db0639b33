/**
 * Up to how many rows a list's total is counted exactly. Past it the count stops (its cost
 * stays that of this many rows however long the list grows) and the total is an estimate:
 * PostgreSQL's planner's, or on SQLite, which has none, the count so far (a lower bound).
 */
export const EXACT_TOTAL_BOUND = 10_000;

/** A window into a list (limit/offset, or limit after a keyset cursor) and one page of results. */
export interface Page {
  limit: number;
  offset: number;
  /** Where the previous page ended (its `next_cursor`): the page starts after that row. */
  cursor?: string;
}

export interface Paged<T> {
  items: T[];
  total: number;
  /** The total is an estimate (the list is larger than the exact count's bound). */
  totalEstimated?: boolean;
  /** Where the next page starts, when there is one and the list pages by keyset. */
  nextCursor?: string;
}

/** The same page with each item mapped (the total, and where the next page starts, kept). */
export function mapPage<T, U>(page: Paged<T>, map: (item: T) => U): Paged<U> {
  return { ...page, items: page.items.map(map) };
}
