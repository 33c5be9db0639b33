import type { PageWindow } from './format.js';

interface PagerProps {
  span: PageWindow;
  total: number;
  /** The server counted only so far and estimated the rest (`meta.total_estimated`). */
  estimated?: boolean;
  /** What the items are, plural ("keys"). */
  noun: string;
  onPage(page: number): void;
}

/** "1–25 of 60 keys" with previous/next; the page lives in the URL (the caller's search). */
export function Pager({ span, total, estimated, noun, onPage }: PagerProps) {
  if (total === 0) return null;
  return (
    <nav className="pager" aria-label="Pages">
      <span>
        {span.first}–{span.last} of {estimated ? 'about ' : ''}
        {total} {noun}
      </span>
      <button type="button" className="secondary" disabled={span.previous === null} onClick={() => span.previous && onPage(span.previous)}>
        Previous
      </button>
      <button type="button" className="secondary" disabled={span.next === null} onClick={() => span.next && onPage(span.next)}>
        Next
      </button>
    </nav>
  );
}
