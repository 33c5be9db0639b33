import { actsForPlatform, type Principal } from '../auth/index.js';
import { autocommit } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { AppError, InvalidRequest } from '../kernel/errors.js';
import type { Notifier } from '../kernel/notifier.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import { EVENT_TYPES, type AgentGroups } from '../kernel/ports.js';
import { topicMatches, topicProblem } from '../kernel/topics.js';
import { EVENT_ID_PATTERN, type Event } from './schemas.js';
import { EVENTS_APPENDED } from './appender.js';
import type { EventFilter, EventRow, EventsStore } from './store.js';

/** Events a stream reads from the log at once. */
const STREAM_BATCH = 500;
const DAY_MS = 86_400_000;

export interface EventsDeps {
  store: EventsStore;
  clock: Clock;
  notifier: Notifier;
  /** Access groups: the groups an admin granted an agent, whose shared artifacts' events it reads. */
  groups: AgentGroups;
  retentionDays: number;
  streamsPerPrincipal: number;
  keepAliveMs: number;
}

/** What a reader asks for: type patterns, a subject, a position to start after. */
export interface EventQuery {
  type?: string;
  subject?: string;
  after?: string;
}

const ID_PREFIX = 'evt_';
const ID_DIGITS = 13;
const EVENT_ID = new RegExp(EVENT_ID_PATTERN);

/** The id of the event at log position `seq`: fixed width, so ids sort as text in log order. */
export function eventId(seq: number): string {
  return ID_PREFIX + seq.toString(32).padStart(ID_DIGITS, '0');
}

/** The log position of event `id`; `field` names where it came from in the error. */
function positionOf(id: string, field: string): number {
  if (!EVENT_ID.test(id)) throw InvalidRequest.field(field, `must be an event id (evt_ and ${ID_DIGITS} base-32 digits)`);
  return parseInt(id.slice(ID_PREFIX.length), 32);
}

function toEvent(row: EventRow): Event {
  return {
    id: eventId(Number(row.seq)),
    type: row.type,
    subject: row.subject,
    actor: row.actor,
    data: JSON.parse(row.data) as Record<string, unknown>,
    reason: row.reason,
    created_at: iso(Number(row.created_at)),
  };
}

/**
 * The known event types that `patterns` (messaging's topic patterns) match; a malformed pattern
 * is a 400 naming `field(index)`. The one check of type patterns, for readers and webhooks.
 */
export function eventTypesMatching(patterns: readonly string[], field: (index: number) => string): string[] {
  for (const [i, pattern] of patterns.entries()) {
    const problem = topicProblem(pattern, true);
    if (problem) throw InvalidRequest.field(field(i), `'${pattern}' ${problem}`);
  }
  return EVENT_TYPES.filter((type) => patterns.some((pattern) => topicMatches(pattern, type)));
}

/**
 * Reading the event log (EventAppender writes it): list it or follow it live.
 * Admins read every event; an agent reads events without readers (shared workspace objects)
 * and those naming it or one of its groups.
 */
export class EventsService {
  /** Open streams per principal on this node. */
  private readonly streams = new Map<string, number>();

  constructor(private readonly deps: EventsDeps) {}

  async list(principal: Principal, query: EventQuery, window: Page): Promise<Paged<Event>> {
    const page = await this.deps.store.list(autocommit, await this.filterFor(principal, query, query.after), window);
    return mapPage(page, toEvent);
  }

  /**
   * Takes one of the principal's stream slots (429 when all are taken); the returned function
   * gives it back.
   */
  openStream(principal: Principal): () => void {
    const key = principal.bucket;
    const open = this.streams.get(key) ?? 0;
    const limit = this.deps.streamsPerPrincipal;
    if (open >= limit) {
      const message = `At most ${limit} event streams may be open per principal; close one first`;
      throw new AppError('rate_limited', message, { limit }, { 'Retry-After': '1' });
    }
    this.streams.set(key, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.streams.get(key) ?? 1) - 1;
      if (left === 0) this.streams.delete(key);
      else this.streams.set(key, left);
    };
  }

  /**
   * The filter a stream reads with; validates the query before the stream opens. Without a
   * position to resume from, the stream starts with the events appended after it opened.
   */
  async streamFilter(principal: Principal, query: EventQuery, lastEventId: string | undefined): Promise<EventFilter> {
    const after = lastEventId ?? query.after;
    const filter = await this.filterFor(principal, query, after, lastEventId === undefined ? 'after' : 'Last-Event-ID');
    filter.afterSeq ??= await this.deps.store.lastSeq(autocommit);
    return filter;
  }

  /**
   * Follows the log from `filter.afterSeq` until `signal` aborts: yields each batch of new
   * events, oldest first, and `null` after `keepAliveMs` without any. Woken by the notifier
   * (every node hears appends on PostgreSQL); it always reads from the table, and re-reads on
   * each idle interval, so a lost notification costs latency, never an event.
   */
  async *follow(filter: EventFilter, signal: AbortSignal): AsyncGenerator<Event[] | null> {
    let afterSeq = filter.afterSeq ?? 0;
    let pending = true;
    let wake: (() => void) | null = null;
    const notice = () => {
      pending = true;
      wake?.();
    };
    const unlistenAppends = this.deps.notifier.listen(EVENTS_APPENDED, notice);
    const unlistenResume = this.deps.notifier.onResume(notice);
    const unlisten = () => {
      unlistenAppends();
      unlistenResume();
    };
    const onAbort = () => wake?.();
    signal.addEventListener('abort', onAbort);
    try {
      while (!signal.aborted) {
        if (pending) {
          pending = false;
          const rows = await this.deps.store.readAfter(autocommit, { ...filter, afterSeq }, STREAM_BATCH);
          if (rows.length > 0) {
            afterSeq = Number(rows[rows.length - 1]!.seq);
            if (rows.length === STREAM_BATCH) pending = true;
            yield rows.map(toEvent);
            continue;
          }
        }
        if (signal.aborted) break;
        const idle = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), this.deps.keepAliveMs);
          wake = () => {
            clearTimeout(timer);
            resolve(false);
          };
          if (pending || signal.aborted) wake();
        });
        wake = null;
        if (idle && !signal.aborted) {
          pending = true;
          yield null;
        }
      }
    } finally {
      unlisten();
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** The position of the newest event (0 when the log is empty): where a new reader starts. */
  lastPosition(): Promise<number> {
    return this.deps.store.lastSeq(autocommit);
  }

  /** Up to `limit` events after log position `afterSeq`, oldest first, with their positions (webhooks read the whole log). */
  async readAfter(afterSeq: number, limit: number): Promise<{ seq: number; event: Event }[]> {
    const rows = await this.deps.store.readAfter(autocommit, { afterSeq }, limit);
    return rows.map((row) => ({ seq: Number(row.seq), event: toEvent(row) }));
  }

  /**
   * Retention: deletes up to `limit` events older than the retention period at `now`, oldest
   * first; answers how many, and whether the batch was full (more may be due).
   */
  async deleteExpired(now: number, limit: number): Promise<{ deleted: number; more: boolean }> {
    const cutoff = now - this.deps.retentionDays * DAY_MS;
    const oldest = await this.deps.store.oldest(autocommit, limit);
    // Only a prefix of the log goes, so a reader's cursor never skips over a hole it made.
    const expired = oldest.findIndex((event) => event.created_at >= cutoff);
    const through = expired === -1 ? oldest.length - 1 : expired - 1;
    if (through < 0) return { deleted: 0, more: false };
    const deleted = await this.deps.store.deleteThrough(autocommit, oldest[through]!.seq);
    return { deleted, more: expired === -1 && oldest.length === limit };
  }

  private async filterFor(principal: Principal, query: EventQuery, after: string | undefined, afterField = 'after'): Promise<EventFilter> {
    const filter: EventFilter = {};
    if (query.type !== undefined)
      filter.types = eventTypesMatching(
        query.type.split(',').map((p) => p.trim()),
        () => 'type',
      );
    if (query.subject !== undefined) filter.subject = query.subject;
    if (after !== undefined) filter.afterSeq = positionOf(after, afterField);
    if (!actsForPlatform(principal)) {
      const agent = principal.agentId ?? principal.actor;
      filter.readers = [`agent:${agent}`, ...(await this.deps.groups.groupsOf(agent)).map((group) => `group:${group}`)];
    }
    return filter;
  }
}
