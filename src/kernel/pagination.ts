/** A window into a list (limit/offset) and one page of results. */
export interface Page {
  limit: number;
  offset: number;
}

export interface Paged<T> {
  items: T[];
  total: number;
}
