import type { Logger } from 'pino';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditedChange, AuditTrail } from '../kernel/ports.js';
import { currentScope, type AuditActor, type RequestScope } from '../kernel/request-scope.js';
import { entryHash, GENESIS_HASH } from './chain.js';
import type { AuditEntry, AuditOutcome, AuditVerification, ListAuditQuery } from './schemas.js';
import type { AuditRow, AuditStore, ChainHead, NewAuditRow } from './store.js';

/** The actor of changes no request made (workers, timers). */
const SYSTEM_ACTOR: AuditActor = { kind: 'system', id: null, key_id: null };

/** Entries verification reads at a time: memory stays bounded however long the log is. */
const VERIFY_PAGE = 1000;
/** Entries one retention pass deletes per transaction. */
const TRIM_BATCH = 10_000;
/** Denial buckets kept in memory at most; past it the oldest is appended early. */
const MAX_DENIAL_BUCKETS = 10_000;
/** Longest User-Agent and path kept (a request's headers may hold 16 KiB). */
const MAX_TEXT = 1000;
const DAY_MS = 86_400_000;

/** An entry before it joins the chain (no prev_hash, hash or position yet). */
type Draft = Omit<AuditEntry, 'prev_hash' | 'hash'> & { atMs: number };

/** Repeated denials of one actor and operation within the window: appended as one entry at its end. */
interface DenialBucket {
  draft: Draft;
  closesAt: number;
}

function clip(text: string | null): string | null {
  return text !== null && text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text;
}

function entryOf(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    at: iso(Number(row.at)),
    actor: { kind: row.actor_kind, id: row.actor_id, key_id: row.actor_key_id },
    action: row.action,
    resource: { type: row.resource_type, id: row.resource_id },
    outcome: row.outcome as AuditOutcome,
    status: row.status === null ? null : Number(row.status),
    request_id: row.request_id,
    ip: row.ip,
    user_agent: row.user_agent,
    count: Number(row.count),
    prev_hash: row.prev_hash,
    hash: row.hash,
  };
}

/** Drafts chained after `head`: each gets the next position, the hash before it, and its own. */
function chained(head: ChainHead | null, drafts: Draft[]): NewAuditRow[] {
  let seq = head?.seq ?? 0;
  let prev = head?.hash ?? GENESIS_HASH;
  return drafts.map(({ atMs, ...fields }) => {
    const hash = entryHash({ ...fields, prev_hash: prev });
    seq += 1;
    const row: NewAuditRow = {
      seq,
      id: fields.id,
      at: atMs,
      actor_kind: fields.actor.kind,
      actor_id: fields.actor.id,
      actor_key_id: fields.actor.key_id,
      action: fields.action,
      resource_type: fields.resource.type,
      resource_id: fields.resource.id,
      outcome: fields.outcome,
      status: fields.status,
      request_id: fields.request_id,
      ip: fields.ip,
      user_agent: fields.user_agent,
      count: fields.count,
      prev_hash: prev,
      hash,
    };
    prev = hash;
    return row;
  });
}

/**
 * The audit log: one hash-chained entry per change to the control plane, appended
 * in the transaction that makes the change; denials (401/403), coalesced per actor and
 * operation within a window; changes that were tried and rolled back, as failed; the list,
 * verification of the chain, and retention.
 */
export class AuditService implements AuditTrail {
  private readonly denials = new Map<string, DenialBucket>();

  constructor(
    private readonly deps: {
      store: AuditStore;
      clock: Clock;
      logger: Logger;
      retentionDays: number;
      denialWindowMs: number;
      /** Who changes are recorded for outside a request: `system`, or the CLI. */
      actor?: AuditActor;
    },
  ) {}

  async record(tx: Tx, change: AuditedChange): Promise<void> {
    const scope = currentScope();
    const draft = this.draft(scope, change, 'allowed', null);
    scope?.recorded.push({ entryId: draft.id, action: change.action, resource: change.resource });
    await this.deps.store.appendAtCommit(tx, (head) => chained(head, [draft]));
  }

  /**
   * A request that ended in `status` (a 4xx or 5xx other than 401/403) after recording changes:
   * those whose entries did not commit (their transaction rolled back) are recorded as failed.
   */
  async failed(scope: RequestScope, status: number): Promise<void> {
    if (scope.recorded.length === 0) return;
    const recorded = scope.recorded.splice(0);
    const committed = await this.deps.store.existing(
      autocommit,
      recorded.map((change) => change.entryId),
    );
    const lost = new Map<string, AuditedChange>();
    // A retried transaction recorded its change once per attempt: one failed entry for them.
    for (const change of recorded)
      if (!committed.has(change.entryId)) lost.set(`${change.action} ${change.resource.type} ${change.resource.id}`, change);
    if (lost.size === 0) return;
    const drafts = [...lost.values()].map((change) => this.draft(scope, change, 'failed', status));
    await this.deps.store.append(autocommit, (head) => chained(head, drafts));
  }

  /**
   * A 401 or 403: counted in memory with the denials of the same actor (the client address for
   * an anonymous one), operation and status, and appended as one entry with that count when
   * the window that the first one opened ends. Updating a chained row would break the chain, so
   * the count is settled before the entry joins it; an attacker's flood costs one entry per
   * window, in bounded memory. A node that crashes loses the denials of its open windows.
   */
  denied(scope: RequestScope, operation: string, path: string, status: number): void {
    const { actor } = scope;
    const who = actor.kind === 'anonymous' ? `ip:${scope.ip}` : `${actor.kind}:${actor.id}:${actor.key_id}`;
    const key = `${who} ${operation} ${status}`;
    const bucket = this.denials.get(key);
    if (bucket) {
      bucket.draft.count += 1;
      return;
    }
    if (this.denials.size >= MAX_DENIAL_BUCKETS) this.appendDenials(this.closeOldest());
    const draft = this.draft(scope, { action: operation, resource: { type: 'path', id: clip(path)! } }, 'denied', status);
    this.denials.set(key, { draft, closesAt: draft.atMs + this.deps.denialWindowMs });
  }

  /**
   * Appends the denial entries whose window has ended (all of them when `all`: the node is
   * stopping); returns the ms until the next window ends.
   */
  async flushDenials(all = false): Promise<number> {
    const now = this.deps.clock.now();
    const due: Draft[] = [];
    let next = this.deps.denialWindowMs;
    for (const [key, bucket] of this.denials) {
      if (all || bucket.closesAt <= now) {
        this.denials.delete(key);
        due.push(bucket.draft);
      } else {
        next = Math.min(next, bucket.closesAt - now);
      }
    }
    await this.appendDenials(due);
    return next;
  }

  private closeOldest(): Draft[] {
    const [key, bucket] = this.denials.entries().next().value!;
    this.denials.delete(key);
    return [bucket.draft];
  }

  private async appendDenials(drafts: Draft[]): Promise<void> {
    if (drafts.length === 0) return;
    await this.deps.store
      .append(autocommit, (head) => chained(head, drafts))
      .catch((err: unknown) => {
        this.deps.logger.error({ err, entries: drafts.length }, 'could not append denials to the audit log');
      });
  }

  private draft(scope: RequestScope | undefined, change: AuditedChange, outcome: AuditOutcome, status: number | null): Draft {
    const atMs = this.deps.clock.now();
    const actor = change.actor ?? scope?.actor ?? this.deps.actor ?? SYSTEM_ACTOR;
    return {
      id: newId('aud', atMs),
      at: iso(atMs),
      atMs,
      actor: { kind: actor.kind, id: actor.id, key_id: actor.key_id },
      action: change.action,
      resource: { type: change.resource.type, id: change.resource.id },
      outcome,
      status,
      request_id: scope?.requestId ?? null,
      ip: scope?.ip ?? null,
      user_agent: clip(scope?.userAgent ?? null),
      count: 1,
    };
  }

  async list(query: Omit<ListAuditQuery, 'limit' | 'offset' | 'cursor'>, window: Page): Promise<Paged<AuditEntry>> {
    const { after, before, ...rest } = query;
    const page = await this.deps.store.list(
      autocommit,
      { ...rest, from: after === undefined ? undefined : Date.parse(after), to: before === undefined ? undefined : Date.parse(before) },
      window,
    );
    return mapPage(page, entryOf);
  }

  /**
   * Walks the chain from the anchor (or the start), a page at a time: each entry's prev_hash
   * must be the hash before it (the anchor's for the first) and its hash must be what its
   * fields hash to. A trim that lands between reading the anchor and the first entry moves the
   * anchor: the walk starts again then.
   */
  async verify(): Promise<AuditVerification> {
    for (;;) {
      const anchor = await this.deps.store.anchor(autocommit);
      const result = await this.walk(anchor?.hash ?? GENESIS_HASH);
      if (result.ok || result.checked > 0 || (await this.deps.store.anchor(autocommit))?.hash === anchor?.hash) {
        return { ...result, anchor: anchor && { seq: Number(anchor.seq), hash: anchor.hash, trimmed_at: iso(Number(anchor.trimmed_at)) } };
      }
    }
  }

  private async walk(first: string): Promise<Omit<AuditVerification, 'anchor'>> {
    let expected = first;
    let afterSeq = -1;
    let checked = 0;
    for (;;) {
      const rows = await this.deps.store.chainAfter(autocommit, afterSeq, VERIFY_PAGE);
      for (const row of rows) {
        const { hash, ...fields } = entryOf(row);
        if (row.prev_hash !== expected || entryHash(fields) !== hash) return { ok: false, checked, first_broken: row.id };
        checked += 1;
        expected = hash;
        afterSeq = Number(row.seq);
      }
      if (rows.length < VERIFY_PAGE) return { ok: true, checked };
    }
  }

  /** Retention: trims entries older than the retention from the oldest end; returns how many. */
  async sweep(): Promise<number> {
    const before = this.deps.clock.now() - this.deps.retentionDays * DAY_MS;
    let removed = 0;
    for (;;) {
      const n = await this.deps.store.trim(before, TRIM_BATCH, this.deps.clock.now());
      removed += n;
      if (n < TRIM_BATCH) return removed;
    }
  }
}
