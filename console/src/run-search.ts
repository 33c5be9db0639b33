/*
 * The runs list's filters as they live in the URL, and what they ask the API: pure, unit-tested
 * in test/console/run-search.test.ts.
 */
import { parseFilter, parsePage } from './format.js';
import { RUN_STATUSES, type RunStatus } from './run-status.js';

/** A time window back from now, as the "Started" filter offers it. */
export const WITHIN = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 } as const;
export type Within = keyof typeof WITHIN;

export interface RunsSearch {
  page?: number;
  /** Plan id or alias. */
  plan?: string;
  status?: RunStatus;
  /** One of the tags the runs were started with. */
  tag?: string;
  /** Started in this window back from now (kept relative: a reload tomorrow shows tomorrow's last day). */
  within?: Within;
  /** Started at or after / before these times (ISO 8601), when no `within`. */
  from?: string;
  to?: string;
}

const isoOrUndefined = (value: unknown): string | undefined => {
  const text = parseFilter(value);
  if (text === undefined || Number.isNaN(Date.parse(text))) return undefined;
  return new Date(text).toISOString();
};

/** The search part of a runs URL, with anything malformed dropped (a hand-edited URL still opens). */
export function parseRunsSearch(search: Record<string, unknown>): RunsSearch {
  const status = parseFilter(search.status);
  const within = parseFilter(search.within);
  const parsed: RunsSearch = {
    page: search.page === undefined ? undefined : parsePage(search.page),
    plan: parseFilter(search.plan),
    status: RUN_STATUSES.find((known) => known === status),
    tag: parseFilter(search.tag),
    within: within !== undefined && within in WITHIN ? (within as Within) : undefined,
  };
  if (parsed.within === undefined) {
    parsed.from = isoOrUndefined(search.from);
    parsed.to = isoOrUndefined(search.to);
  }
  return parsed;
}

/** GET /coordination/runs's query for these filters, `now` (ms, the time of the request) anchoring a relative window. */
export function runsQuery(search: RunsSearch, now = Date.now()) {
  return {
    plan_id: search.plan,
    status: search.status,
    tag: search.tag,
    started_after: search.within ? new Date(now - WITHIN[search.within]).toISOString() : search.from,
    started_before: search.within ? undefined : search.to,
  };
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
