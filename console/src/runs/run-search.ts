/*
 * The runs list's filters as they live in the URL, and what they ask the API: pure, unit-tested
 * in test/console/run-search.test.ts.
 */
import { parseFilter, parsePage } from '../format.js';
import { RUN_STATUSES, type RunStatus } from './run-status.js';
import { parseTimeWindow, windowBounds, type TimeWindow } from '../time-window.js';

/** The time window is when the runs started. */
export interface RunsSearch extends TimeWindow {
  page?: number;
  /** Plan id or alias. */
  plan?: string;
  status?: RunStatus;
  /** One of the tags the runs were started with. */
  tag?: string;
}

/** The search part of a runs URL, with anything malformed dropped (a hand-edited URL still opens). */
export function parseRunsSearch(search: Record<string, unknown>): RunsSearch {
  const status = parseFilter(search.status);
  return {
    page: search.page === undefined ? undefined : parsePage(search.page),
    plan: parseFilter(search.plan),
    status: RUN_STATUSES.find((known) => known === status),
    tag: parseFilter(search.tag),
    ...parseTimeWindow(search),
  };
}

/** GET /coordination/runs's query for these filters, `now` (ms, the time of the request) anchoring a relative window. */
export function runsQuery(search: RunsSearch, now = Date.now()) {
  const { after, before } = windowBounds(search, now);
  return { plan_id: search.plan, status: search.status, tag: search.tag, started_after: after, started_before: before };
}
