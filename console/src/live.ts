import { useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useEffect } from 'react';

/** How often a view's data is refetched until the event stream keeps it live. */
export const REFRESH_MS = 3_000;

export interface LiveData {
  /** The queries a change makes stale (a prefix: `['agents']` covers every agents query). */
  queryKey: QueryKey;
  /** The event types that change them, as design §8 patterns (`agent.*`, `key.>`). */
  events: readonly string[];
}

/**
 * Keeps a view's queries fresh: the one seam for live updates. Today it refetches them every
 * REFRESH_MS while the page is visible; once GET /api/v1/events/stream exists it subscribes to
 * `events` and invalidates `queryKey` on each (design §9: live, no polling), and no view changes.
 */
export function useLiveRefresh({ queryKey }: LiveData): void {
  const queryClient = useQueryClient();
  // A key written inline is a new array on every render: compare it by value.
  const key = JSON.stringify(queryKey);
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void queryClient.invalidateQueries({ queryKey: JSON.parse(key) as QueryKey });
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [queryClient, key]);
}
