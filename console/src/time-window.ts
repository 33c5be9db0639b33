/*
 * A list's time filter as it lives in the URL (a window back from now, or between two times),
 * what it asks the API, and its form fields' values: pure, unit-tested in
 * test/console/time-window.test.ts.
 */
import { parseFilter } from './format.js';

/** A time window back from now, as the time filters offer it. */
export const WITHIN = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 } as const;
export type Within = keyof typeof WITHIN;

export const WITHIN_LABELS: Record<Within, string> = {
  '1h': 'Last hour',
  '24h': 'Last 24 hours',
  '7d': 'Last 7 days',
  '30d': 'Last 30 days',
};

export interface TimeWindow {
  /** In this window back from now (kept relative: a reload tomorrow shows tomorrow's last day). */
  within?: Within;
  /** At or after / before these times (ISO 8601), when no `within`. */
  from?: string;
  to?: string;
}

/** The time filter's select: any time, a window back from now, or between two times. */
export type TimeChoice = Within | 'any' | 'between';

/** A time filter as its fields hold it while being edited: the choice, and `datetime-local` values. */
export interface TimeWindowDraft {
  choice: TimeChoice;
  from: string;
  to: string;
}

const isoOrUndefined = (value: unknown): string | undefined => {
  const text = parseFilter(value);
  if (text === undefined || Number.isNaN(Date.parse(text))) return undefined;
  return new Date(text).toISOString();
};

/** The window of a URL's search, with anything malformed dropped; a relative window wins over times. */
export function parseTimeWindow(search: Record<string, unknown>): TimeWindow {
  const within = parseFilter(search.within);
  if (within !== undefined && within in WITHIN) return { within: within as Within };
  return { within: undefined, from: isoOrUndefined(search.from), to: isoOrUndefined(search.to) };
}

/** The window as the API's bounds (`after` inclusive, `before` exclusive), `now` (ms, the time of the request) anchoring a relative one. */
export function windowBounds(window: TimeWindow, now = Date.now()): { after: string | undefined; before: string | undefined } {
  if (window.within) return { after: new Date(now - WITHIN[window.within]).toISOString(), before: undefined };
  return { after: window.from, before: window.to };
}

/** The fields' values for a window from the URL. */
export function draftOf(window: TimeWindow): TimeWindowDraft {
  return {
    choice: window.within ?? (window.from || window.to ? 'between' : 'any'),
    from: toLocalInput(window.from),
    to: toLocalInput(window.to),
  };
}

/** The window the fields say, for the URL. */
export function windowOf(draft: TimeWindowDraft): TimeWindow {
  if (draft.choice === 'between') return { within: undefined, from: fromLocalInput(draft.from), to: fromLocalInput(draft.to) };
  return { within: draft.choice === 'any' ? undefined : draft.choice, from: undefined, to: undefined };
}

/** An ISO time as a `datetime-local` input's value, in the browser's time zone ('' for none). */
export function toLocalInput(iso: string | undefined): string {
  if (iso === undefined) return '';
  const date = new Date(iso);
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}

/** A `datetime-local` input's value (the browser's time zone) as ISO, or undefined when empty. */
export function fromLocalInput(value: string): string | undefined {
  return value === '' ? undefined : isoOrUndefined(value);
}
