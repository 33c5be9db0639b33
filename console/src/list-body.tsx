import { Link } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { ErrorNotice } from './errors.js';

/** Where a list page's "show every …" link leads: the page without its filters. */
type ListPath = '/runs' | '/artifacts' | '/routines';

/**
 * A list page's body: its error, "Loading…", an empty notice (for filters that match nothing,
 * one that leads back to the whole list), or the list itself.
 */
export function ListBody({
  query,
  total,
  empty,
  unmatched,
  children,
}: {
  query: { error: unknown; isPending: boolean; isError: boolean };
  total: number;
  /** What the page says when there is nothing at all, and how to make the first one. */
  empty: ReactNode;
  /** Set when filters are applied: what one item is called, and the unfiltered page. */
  unmatched?: { noun: string; to: ListPath } | null;
  children: ReactNode;
}) {
  let body: ReactNode = children;
  if (query.isPending) body = <p className="muted">Loading…</p>;
  else if (total === 0 && !query.isError)
    body = unmatched ? (
      <div className="notice empty">
        <p>No {unmatched.noun} matches these filters.</p>
        <Link to={unmatched.to}>Show every {unmatched.noun}</Link>
      </div>
    ) : (
      <div className="notice empty">{empty}</div>
    );
  return (
    <>
      <ErrorNotice error={query.error} />
      {body}
    </>
  );
}
