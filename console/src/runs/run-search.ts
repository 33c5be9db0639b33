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
  /** `key=value`: a value of the metadata the runs were started with. */
  metadata?: string;
}

/** A metadata filter as the API takes it: a key, '=', the value (which may hold '=' too). */
const METADATA_FILTER = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}=/;

/** The search part of a runs URL, with anything malformed dropped (a hand-edited URL still opens). */
export function parseRunsSearch(search: Record<string, unknown>): RunsSearch {
  const status = parseFilter(search.status);
  return {
    page: search.page === undefined ? undefined : parsePage(search.page),
    plan: parseFilter(search.plan),
    status: RUN_STATUSES.find((known) => known === status),
    tag: parseFilter(search.tag),
    metadata: metadataFilter(search.metadata),
    ...parseTimeWindow(search),
  };
}

/** GET /coordination/runs's query for these filters, `now` (ms, the time of the request) anchoring a relative window. */
export function runsQuery(search: RunsSearch, now = Date.now()) {
  const { after, before } = windowBounds(search, now);
  return {
    plan_id: search.plan,
    status: search.status,
    tag: search.tag,
    metadata: search.metadata,
    started_after: after,
    started_before: before,
  };
}

/** A `key=value` filter (spaces around the key trimmed), or undefined for anything else. */
export function metadataFilter(value: unknown): string | undefined {
  const text = parseFilter(value);
  if (text === undefined) return undefined;
  const at = text.indexOf('=');
  const filter = `${text.slice(0, at).trim()}=${text.slice(at + 1)}`;
  return at > 0 && METADATA_FILTER.test(filter) ? filter : undefined;
}

/** The statuses a bulk replay takes: finished ones. */
const REPLAYABLE = ['completed', 'failed', 'cancelled'] as const;
type Replayable = (typeof REPLAYABLE)[number];

export interface ReplayFilter {
  plan_id?: string;
  status?: Replayable;
  after?: string;
  before?: string;
}

/**
 * POST /coordination/runs/replay's filter for the runs list's filters (a relative window fixed at
 * `now`), or why they cannot be replayed as filtered: the replay has no tag or metadata filter, and
 * takes finished runs only.
 */
export function replayFilter(search: RunsSearch, now = Date.now()): { filter: ReplayFilter } | { unavailable: string } {
  if (search.tag !== undefined || search.metadata !== undefined) {
    return { unavailable: 'A replay filters by plan, status and start time only: clear the tag and metadata filters to replay.' };
  }
  const status = REPLAYABLE.find((known) => known === search.status);
  if (search.status !== undefined && status === undefined) {
    return { unavailable: `Only finished runs are replayed, not ${search.status} ones.` };
  }
  const { after, before } = windowBounds(search, now);
  return { filter: { plan_id: search.plan, status, after, before } };
}
