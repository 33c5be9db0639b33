import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who made a change, as the audit log records it: a principal's kind (admin, agent, key, user),
 * `anonymous` for a request without credentials (a 401, a public route), `system` for work no
 * request caused (workers, the CLI).
 */
export interface AuditActor {
  readonly kind: string;
  readonly id: string | null;
  readonly key_id: string | null;
}

/** A change an audit entry was recorded for, and the id of that entry. */
export interface RecordedChange {
  readonly entryId: string;
  readonly action: string;
  readonly resource: { readonly type: string; readonly id: string };
}

/**
 * What the audit log records of the request that is being served: set by the HTTP layer for
 * every request that may change something, read by the audit trail when a service records a
 * change, so services need no HTTP and no extra parameter to say who asked.
 */
export interface RequestScope {
  readonly actor: AuditActor;
  readonly requestId: string | null;
  readonly ip: string | null;
  readonly userAgent: string | null;
  /** The changes recorded while serving it: those that did not commit are recorded as failed. */
  readonly recorded: RecordedChange[];
  /**
   * Reports a refusal the HTTP layer's audit of 401/403 does not see as a denial of `operation`:
   * an MCP tool's error inside a 200, a sign-in held back by its throttle (429).
   */
  readonly denied?: (operation: string, status: 401 | 403 | 429) => void;
}

const scopes = new AsyncLocalStorage<RequestScope>();

/** Runs `work` (and everything it starts) in `scope`. */
export function runInScope<T>(scope: RequestScope, work: () => T): T {
  return scopes.run(scope, work);
}

/** The scope of the request being served, or undefined outside one (workers, timers). */
export function currentScope(): RequestScope | undefined {
  return scopes.getStore();
}
