/*
 * The audit log's filters as they live in the URL, and what they ask the API: pure, unit-tested
 * in test/console/audit-search.test.ts.
 */
import type { Item } from '../../../src/client/browser.js';
import { parseFilter, parsePage } from '../format.js';
import { parseTimeWindow, windowBounds, type TimeWindow } from '../time-window.js';

export type AuditEntry = Item<'audit.list'>;
export type AuditOutcome = AuditEntry['outcome'];

export const AUDIT_OUTCOMES: readonly AuditOutcome[] = ['allowed', 'denied', 'failed'];

/** The time window is when the entries were recorded. */
export interface AuditSearch extends TimeWindow {
  page?: number;
  /** The actor's id: an agent id, `user:<username>`, `admin`, `key:<key id>`, `system`. */
  actor?: string;
  /** `key.create`, or for a denial the operation asked for (`coordination.deletePlan`). */
  action?: string;
  /** The resource's id (a denial's is its request path). */
  resource?: string;
  outcome?: AuditOutcome;
}

/** The search part of an audit URL, with anything malformed dropped (a hand-edited URL still opens). */
export function parseAuditSearch(search: Record<string, unknown>): AuditSearch {
  const outcome = parseFilter(search.outcome);
  return {
    page: search.page === undefined ? undefined : parsePage(search.page),
    actor: parseFilter(search.actor),
    action: parseFilter(search.action),
    resource: parseFilter(search.resource),
    outcome: AUDIT_OUTCOMES.find((known) => known === outcome),
    ...parseTimeWindow(search),
  };
}

/** GET /audit's query for these filters, `now` (ms, the time of the request) anchoring a relative window. */
export function auditQuery(search: AuditSearch, now = Date.now()) {
  const { after, before } = windowBounds(search, now);
  return { actor: search.actor, action: search.action, resource_id: search.resource, outcome: search.outcome, after, before };
}
