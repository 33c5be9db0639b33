import { inSpan, SpanKind, SpanStatusCode } from '../kernel/tracing.js';
import { randomBytes } from 'node:crypto';
import type { Principal } from '../auth/index.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { eventTypesMatching, type Event } from '../events/index.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import type { Notifier } from '../kernel/notifier.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import { SYSTEM_ACTOR, type AuditTrail, type DeliveryTarget, type DeliveryTargets, type EventLog } from '../kernel/ports.js';
import { topicMatches } from '../kernel/topics.js';
import type { ReceiverGuard } from './addresses.js';
import type {
  CreatedWebhook,
  CreateWebhookBody,
  Delivery,
  DeliveryAttempt,
  ListDeliveriesQuery,
  UpdateWebhookBody,
  Webhook,
} from './schemas.js';
import type { AttemptResult, DeliveryTransport } from './sender.js';
import type { ClaimedDelivery, DeliveryRow, WebhookRow, WebhooksStore } from './store.js';
import { toDelivery, toWebhook } from './views.js';

/** Notices on this channel tell delivery workers (on every node) that deliveries became due. */
export const WEBHOOK_DELIVERIES_DUE = 'webhooks:due';

/** The type of the event `POST /webhooks/{id}/test` sends (not in the log). */
export const TEST_EVENT_TYPE = 'webhook.test';

/** Events matched to webhooks per read of the log. */
const FAN_OUT_BATCH = 500;
/** A delivery is retried until this long after its first attempt, then it has failed; a webhook failing this long is disabled. */
export const RETRY_WINDOW_MS = 24 * 3_600_000;
/** The first retry comes this long after the first attempt; each next one twice as late… */
const FIRST_RETRY_MS = 10_000;
/** …but never later than this after the previous one. */
const MAX_RETRY_MS = 3_600_000;
/** A claimed delivery is not due again before its attempt's timeout plus this, so no one else takes it meanwhile. */
const LEASE_MARGIN_MS = 30_000;
const DAY_MS = 86_400_000;

/** A claimed delivery with where it goes. */
export type TargetedDelivery = ClaimedDelivery & Pick<WebhookRow, 'url' | 'secret' | 'channel_type'>;

/** The attempt of a `mailto:` delivery while no SMTP server is configured (it was removed since the channel was made). */
const NO_SMTP_SERVER: AttemptResult = {
  delivered: false,
  statusCode: null,
  latencyMs: 0,
  error: 'no SMTP server is configured (SWITCHBOARD_SMTP_URL)',
  responseBody: null,
};

/** The event log, as webhooks read it (events/EventsService). */
export interface EventFeed {
  /** The position of the newest event: where a new webhook starts. */
  lastPosition(): Promise<number>;
  readAfter(afterSeq: number, limit: number): Promise<{ seq: number; event: Event }[]>;
}

export interface WebhooksDeps {
  store: WebhooksStore;
  clock: Clock;
  notifier: Notifier;
  /** webhook.disabled. */
  events: EventLog;
  feed: EventFeed;
  metrics: DomainMetrics;
  audit: AuditTrail;
  /** POSTs deliveries to http(s) URLs. */
  sender: DeliveryTransport;
  /** Mails the deliveries of `mailto:` targets; null when no SMTP server is configured. */
  mailer: DeliveryTransport | null;
  /** Which receivers may be reached: a URL whose host is a refused IP address is a 400. */
  guard: ReceiverGuard;
  /** How long one attempt may take (the lease of a claimed delivery is measured from it). */
  timeoutMs: number;
  /** Delivered and failed deliveries are kept as long as events (SWITCHBOARD_EVENT_RETENTION_DAYS). */
  retentionDays: number;
}

/** A Standard Webhooks signing secret: `whsec_` + base64 of 32 random bytes. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The wait before the retry that follows attempt number `attempt` (1-based). */
export function retryDelayMs(attempt: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempt - 1, 30));
}

/**
 * Refuses a URL that is not http(s), or whose host is an IP address the guard refuses. A host
 * name is checked when each delivery resolves it (its addresses may change).
 */
function checkUrl(raw: string, guard: ReceiverGuard, field = 'url'): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw InvalidRequest.field(field, 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw InvalidRequest.field(field, 'must be an http or https URL');
  const refusal = guard.literalRefusal(url);
  if (refusal !== null) throw InvalidRequest.field(field, refusal);
  return raw;
}

/** A mailbox target's URL (`mailto:a@x,b@y`), or an http(s) URL that passes checkUrl. */
function checkTargetUrl(raw: string, guard: ReceiverGuard, field: string): string {
  return raw.startsWith('mailto:') ? raw : checkUrl(raw, guard, field);
}

/** The channel-owned row of a delivery target, kept for event webhooks' routes to refuse. */
function eventWebhookOnly(row: WebhookRow | undefined, id: string): WebhookRow {
  if (!row || row.channel_type !== null) throw new NotFound('Webhook', id);
  return row;
}

/** Refuses a pattern that is malformed or matches no event type (a typo would never deliver). */
function checkTypes(types: string[]): string {
  for (const [i, pattern] of types.entries()) {
    if (eventTypesMatching([pattern], () => `types/${i}`).length === 0) {
      throw InvalidRequest.field(`types/${i}`, `'${pattern}' matches no event type (e.g. run.completed, task.>, see GET /api/v1/events)`);
    }
  }
  return JSON.stringify(types);
}

/**
 * Outbound webhooks: admins register receivers for event type patterns; new events
 * of the log are matched to them after commit (fan-out), and each match becomes a delivery,
 * POSTed signed (Standard Webhooks) by the delivery worker and retried with backoff for 24 h.
 * Nothing here runs in the request that caused an event.
 */
export class WebhooksService {
  constructor(private readonly deps: WebhooksDeps) {}

  /** `creator`: the actor recorded as its `created_by`. */
  async create(body: CreateWebhookBody, creator: string): Promise<CreatedWebhook> {
    const now = this.deps.clock.now();
    const row: WebhookRow = {
      id: newId('whk', now),
      url: checkUrl(body.url, this.deps.guard),
      types: checkTypes(body.types),
      description: body.description ?? null,
      secret: newSecret(),
      enabled: 1,
      disabled_reason: null,
      // Only events that happen from now on.
      cursor: await this.deps.feed.lastPosition(),
      failing_since: null,
      created_by: creator,
      channel_type: null,
      created_at: now,
      updated_at: now,
    };
    await this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'webhook.create', resource: { type: 'webhook', id: row.id } });
      await this.deps.store.insertWebhook(tx, row);
    });
    return { ...toWebhook(row), secret: row.secret };
  }

  async list(window: Page): Promise<Paged<Webhook>> {
    const page = await this.deps.store.listWebhooks(autocommit, window);
    return mapPage(page, toWebhook);
  }

  async get(id: string): Promise<Webhook> {
    return toWebhook(eventWebhookOnly(await this.deps.store.findWebhook(autocommit, id), id));
  }

  async update(id: string, body: UpdateWebhookBody, principal: Principal): Promise<Webhook> {
    const changes: Partial<WebhookRow> = {};
    if (body.url !== undefined) changes.url = checkUrl(body.url, this.deps.guard);
    if (body.types !== undefined) changes.types = checkTypes(body.types);
    if (body.description !== undefined) changes.description = body.description;
    // Read before the transaction: on SQLite the one connection is the transaction's.
    const position = body.enabled === true ? await this.deps.feed.lastPosition() : 0;
    return this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'webhook.update', resource: { type: 'webhook', id } });
      const row = eventWebhookOnly(await this.deps.store.lockWebhook(tx, id), id);
      const now = this.deps.clock.now();
      const enabling = body.enabled === true && row.enabled === 0;
      const disabling = body.enabled === false && row.enabled === 1;
      // Re-enabled: from the events that happen next, with a clean record.
      if (enabling) Object.assign(changes, { enabled: 1, disabled_reason: null, failing_since: null, cursor: position });
      if (disabling) Object.assign(changes, { enabled: 0, disabled_reason: `disabled by ${principal.actor}` });
      const updated: WebhookRow = { ...row, ...changes, updated_at: now };
      await this.deps.store.updateWebhook(tx, id, { ...changes, updated_at: now });
      if (disabling) await this.appendDisabled(tx, updated, principal.actor);
      return toWebhook(updated);
    });
  }

  async remove(id: string): Promise<void> {
    await this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'webhook.delete', resource: { type: 'webhook', id } });
      eventWebhookOnly(await this.deps.store.lockWebhook(tx, id), id);
      await this.deps.store.deleteWebhook(tx, id);
    });
  }

  async deliveries(id: string, query: Omit<ListDeliveriesQuery, 'limit' | 'offset'>, window: Page): Promise<Paged<Delivery>> {
    await this.find(autocommit, id);
    const page = await this.deps.store.listDeliveries(autocommit, id, query, window);
    return mapPage(page, toDelivery);
  }

  /** A delivery's attempts, oldest first: each one's status, latency and error. */
  async attempts(id: string, deliveryId: string, window: Page): Promise<Paged<DeliveryAttempt>> {
    await this.find(autocommit, id);
    if (!(await this.deps.store.findDelivery(autocommit, id, deliveryId))) throw new NotFound('Delivery', deliveryId);
    const page = await this.deps.store.listAttempts(autocommit, deliveryId, window);
    return {
      ...page,
      items: page.items.map((row) => ({
        attempt: row.attempt,
        started_at: iso(row.started_at),
        status_code: row.status_code,
        latency_ms: row.latency_ms,
        error: row.error,
      })),
    };
  }

  /** Queues a `webhook.test` event for this webhook alone (it is not in the log). */
  async test(id: string, principal: Principal): Promise<Delivery> {
    const now = this.deps.clock.now();
    return this.deps.store.inTransaction(async (tx) => {
      const webhook = this.enabledOnly(eventWebhookOnly(await this.deps.store.findWebhook(tx, id), id));
      const event: Event = {
        id: newId('evt', now),
        type: TEST_EVENT_TYPE,
        subject: webhook.id,
        actor: principal.actor,
        data: { webhook_id: webhook.id, url: webhook.url },
        reason: null,
        created_at: iso(now),
      };
      const row = this.deliveryRow(webhook.id, null, event, now);
      await this.deps.store.insertDeliveries(tx, [row]);
      await this.deps.notifier.notifyIn(tx, WEBHOOK_DELIVERIES_DUE);
      return toDelivery(row);
    });
  }

  /** Attempts a pending or failed delivery again at once (409 once delivered). */
  async retry(id: string, deliveryId: string): Promise<Delivery> {
    const now = this.deps.clock.now();
    return this.deps.store.inTransaction(async (tx) => {
      this.enabledOnly(await this.find(tx, id));
      const delivery = await this.deps.store.findDelivery(tx, id, deliveryId);
      if (!delivery) throw new NotFound('Delivery', deliveryId);
      if (!(await this.deps.store.makeDue(tx, deliveryId, now))) throw new Conflict(`Delivery '${deliveryId}' was delivered already`);
      await this.deps.notifier.notifyIn(tx, WEBHOOK_DELIVERIES_DUE);
      return toDelivery({ ...delivery, status: 'pending', next_attempt_at: now });
    });
  }

  // ---- delivery targets of notification channels (kernel/ports.ts DeliveryTargets) ----

  /** The port through which notification channels own delivery targets and queue deliveries to them. */
  readonly targets: DeliveryTargets = {
    put: async (tx: Tx, target: DeliveryTarget, field: string) => {
      const url = checkTargetUrl(target.url, this.deps.guard, field);
      const now = this.deps.clock.now();
      const existing = await this.deps.store.lockWebhook(tx, target.id);
      if (existing) {
        await this.deps.store.updateWebhook(tx, target.id, { url, channel_type: target.channelType, updated_at: now });
        return { secret: existing.secret };
      }
      const secret = newSecret();
      await this.deps.store.insertWebhook(tx, {
        id: target.id,
        url,
        types: '[]',
        description: null,
        secret,
        enabled: 1,
        disabled_reason: null,
        cursor: 0,
        failing_since: null,
        created_by: target.createdBy,
        channel_type: target.channelType,
        created_at: now,
        updated_at: now,
      });
      return { secret };
    },
    remove: async (tx: Tx, id: string) => {
      await this.deps.store.deleteWebhook(tx, id);
    },
    enqueue: async (tx: Tx, id: string, message: { id: string; type: string; payload: string }) => {
      const row = this.deliveryRow(id, null, message, this.deps.clock.now(), message.payload);
      await this.deps.store.insertDeliveries(tx, [row]);
      await this.deps.notifier.notifyIn(tx, WEBHOOK_DELIVERIES_DUE);
      return row.id;
    },
  };

  // ---- background work (the workers in index.ts) ----

  /**
   * Matches the events appended since each enabled webhook's cursor to its patterns: one
   * delivery per match, inserted in the transaction that advances the cursor. The cursor moves
   * only from where this pass read it, so two nodes never fan out the same events twice (and
   * (webhook, event) is unique besides). Returns how many deliveries it queued.
   */
  async fanOut(): Promise<number> {
    let queued = 0;
    for (;;) {
      const webhooks = await this.deps.store.enabledCursors(autocommit);
      if (webhooks.length === 0) return queued;
      const batch = await this.deps.feed.readAfter(Math.min(...webhooks.map((w) => w.cursor)), FAN_OUT_BATCH);
      if (batch.length === 0) return queued;
      const through = batch[batch.length - 1]!.seq;
      const now = this.deps.clock.now();
      for (const webhook of webhooks) {
        if (webhook.cursor >= through) continue;
        const patterns = JSON.parse(webhook.types) as string[];
        const rows = batch
          .filter(({ seq, event }) => seq > webhook.cursor && patterns.some((pattern) => topicMatches(pattern, event.type)))
          .map(({ seq, event }) => this.deliveryRow(webhook.id, seq, event, now));
        queued += await this.deps.store.inTransaction(async (tx) => {
          if (!(await this.deps.store.advanceCursor(tx, webhook.id, webhook.cursor, through))) return 0;
          await this.deps.store.insertDeliveries(tx, rows);
          if (rows.length > 0) await this.deps.notifier.notifyIn(tx, WEBHOOK_DELIVERIES_DUE);
          return rows.length;
        });
      }
      if (batch.length < FAN_OUT_BATCH) return queued;
    }
  }

  /** Claims up to `limit` due deliveries with what their attempts send. */
  async claimDue(limit: number): Promise<TargetedDelivery[]> {
    const now = this.deps.clock.now();
    const claimed = await this.deps.store.claimDue(autocommit, now, now + this.deps.timeoutMs + LEASE_MARGIN_MS, limit);
    const targets = await this.deps.store.targets(autocommit, [...new Set(claimed.map((d) => d.webhook_id))]);
    return claimed.flatMap((delivery) => {
      const target = targets.get(delivery.webhook_id);
      return target ? [{ ...delivery, url: target.url, secret: target.secret, channel_type: target.channel_type }] : [];
    });
  }

  /** Makes one claimed attempt and records how it ended (unless `stop` cut it short). */
  async attempt(delivery: TargetedDelivery, stop: AbortSignal): Promise<void> {
    const mail = delivery.url.startsWith('mailto:');
    // A span per attempt (no request carries it: the worker claimed it), its outcome on it.
    await inSpan(
      `deliver_webhook ${delivery.webhook_id}`,
      {
        kind: SpanKind.CLIENT,
        attributes: () => ({
          ...(mail ? {} : { 'http.request.method': 'POST', 'server.address': new URL(delivery.url).hostname }),
          'switchboard.webhook.id': delivery.webhook_id,
          'switchboard.webhook.delivery.id': delivery.id,
          'switchboard.webhook.delivery.attempt': delivery.attempts,
          'switchboard.event.id': delivery.event_id,
        }),
      },
      async (span) => {
        const message = {
          url: delivery.url,
          secret: delivery.secret,
          eventId: delivery.event_id,
          payload: delivery.payload,
          timestamp: this.deps.clock.now(),
        };
        const transport = mail ? this.deps.mailer : this.deps.sender;
        const result = transport ? await transport.send(message, stop) : NO_SMTP_SERVER;
        if (result?.statusCode != null) span.setAttribute('http.response.status_code', result.statusCode);
        if (result && !result.delivered)
          span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? `HTTP ${result.statusCode}` });
        // Shutting down: the lease runs out and another node (or the next start) tries again.
        if (result) await this.record(delivery, result);
      },
    );
  }

  /** Retention: deletes up to `limit` settled deliveries (with their attempts) older than the event retention period at `now`. */
  async deleteExpired(now: number, limit: number): Promise<{ deleted: number; more: boolean }> {
    const deleted = await this.deps.store.deleteSettledBefore(autocommit, now - this.deps.retentionDays * DAY_MS, limit);
    return { deleted, more: deleted === limit };
  }

  /** When the earliest pending delivery is due; null when none is. */
  nextDueAt(): Promise<number | null> {
    return this.deps.store.nextDueAt(autocommit);
  }

  /**
   * Writes an attempt's outcome: delivered (a 2xx; the webhook's failing streak ends), retried
   * later with exponential backoff, or failed 24 h after the first attempt. A webhook failing
   * for 24 h in a row is disabled, with a `webhook.disabled` event in the same transaction.
   */
  private async record(delivery: TargetedDelivery, result: AttemptResult): Promise<void> {
    const now = this.deps.clock.now();
    const { store } = this.deps;
    const measured = {
      last_status_code: result.statusCode,
      latency_ms: result.latencyMs,
      error: result.error,
      response_body: result.responseBody,
    };
    const deadline = delivery.first_attempt_at! + RETRY_WINDOW_MS;
    const outcome = result.delivered ? 'delivered' : now >= deadline ? 'gave_up' : 'failed';
    this.deps.metrics.webhookDelivery(outcome);
    if (delivery.channel_type !== null) this.deps.metrics.notification(delivery.channel_type, outcome);
    await store.inTransaction(async (tx) => {
      if (result.delivered) {
        if (await store.recordAttempt(tx, delivery, { status: 'delivered', next_attempt_at: null, ...measured })) {
          await store.clearFailing(tx, delivery.webhook_id);
        }
        return;
      }
      const outcome =
        now >= deadline
          ? ({ status: 'failed', next_attempt_at: null } as const)
          : ({ status: 'pending', next_attempt_at: Math.min(now + retryDelayMs(delivery.attempts), deadline) } as const);
      if (!(await store.recordAttempt(tx, delivery, { ...outcome, ...measured }))) return;
      // Locked, so two nodes recording failures at once disable it (and tell of it) once.
      const webhook = await store.lockWebhook(tx, delivery.webhook_id);
      // A channel's target is never disabled: each notification is tried for 24 h on its own.
      if (!webhook || webhook.enabled === 0 || webhook.channel_type !== null) return;
      const failingSince = webhook.failing_since ?? now;
      if (webhook.failing_since === null) await store.markFailing(tx, webhook.id, now);
      if (now - failingSince < RETRY_WINDOW_MS) return;
      const reason = `deliveries failed for 24 h in a row (since ${iso(failingSince)})`;
      await store.updateWebhook(tx, webhook.id, { enabled: 0, disabled_reason: reason, updated_at: now });
      await this.appendDisabled(tx, { ...webhook, enabled: 0, disabled_reason: reason, failing_since: failingSince }, SYSTEM_ACTOR);
    });
  }

  private appendDisabled(tx: Tx, webhook: WebhookRow, actor: string): Promise<void> {
    return this.deps.events.append(tx, {
      type: 'webhook.disabled',
      subject: webhook.id,
      actor,
      data: { webhook: toWebhook(webhook) },
      // Webhooks are admin business.
      readers: { agents: [] },
    });
  }

  private deliveryRow(
    webhookId: string,
    seq: number | null,
    event: Pick<Event, 'id' | 'type'>,
    now: number,
    payload = JSON.stringify(event),
  ): DeliveryRow {
    return {
      id: newId('whd', now),
      attempts: 0,
      webhook_id: webhookId,
      event_seq: seq,
      event_id: event.id,
      event_type: event.type,
      payload,
      status: 'pending',
      next_attempt_at: now,
      first_attempt_at: null,
      last_attempt_at: null,
      last_status_code: null,
      latency_ms: null,
      error: null,
      response_body: null,
      created_at: now,
    };
  }

  private async find(tx: Tx, id: string): Promise<WebhookRow> {
    const row = await this.deps.store.findWebhook(tx, id);
    if (!row) throw new NotFound('Webhook', id);
    return row;
  }

  private enabledOnly(webhook: WebhookRow): WebhookRow {
    if (webhook.enabled === 0) throw new Conflict(`Webhook '${webhook.id}' is disabled; PATCH it with {"enabled": true} first`);
    return webhook;
  }
}
