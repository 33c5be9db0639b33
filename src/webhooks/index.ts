import { EVENTS_APPENDED } from '../events/index.js';
import type { Platform } from '../platform.js';
import type { EventLog, RetentionRule } from '../kernel/ports.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { ReceiverGuard } from './addresses.js';
import { DeliveryWorker } from './delivery-worker.js';
import { Mailer } from './mailer.js';
import { webhooksRoutes } from './routes.js';
import { WebhookSender } from './sender.js';
import { WebhooksService, type EventFeed } from './service.js';
import { WebhooksStore } from './store.js';

export { WebhooksService } from './service.js';
export type { MailPayload } from './mailer.js';
export * as webhookSchemas from './schemas.js';

/**
 * Outbound webhooks: CRUD and the delivery log, a fan-out worker that
 * matches new events of the log to webhooks (woken by appends on any node), and a delivery
 * worker that POSTs them signed and retries.
 */
export function createWebhooksDomain(deps: { platform: Platform; events: EventLog; feed: EventFeed }) {
  const { platform } = deps;
  const { config } = platform;
  const guard = new ReceiverGuard({ enabled: config.webhookDenyPrivate, allowed: config.webhookAllowedHosts });
  const service = new WebhooksService({
    store: new WebhooksStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    notifier: platform.notifier,
    events: deps.events,
    feed: deps.feed,
    metrics: platform.metrics,
    audit: platform.audit,
    sender: new WebhookSender({ timeoutMs: config.webhookTimeoutMs, guard }),
    mailer:
      config.smtpUrl === null ? null : new Mailer({ smtpUrl: config.smtpUrl, from: config.smtpFrom, timeoutMs: config.webhookTimeoutMs }),
    guard,
    timeoutMs: config.webhookTimeoutMs,
    retentionDays: config.eventRetentionDays,
  });
  const fanOut = new LoopWorker({
    name: 'webhook-fan-out',
    intervalMs: config.webhookPollMs,
    logger: platform.logger,
    wakeOn: { notifier: platform.notifier, channel: EVENTS_APPENDED },
    run: async () => {
      await service.fanOut();
    },
  });
  const delivery = new DeliveryWorker({
    service,
    clock: platform.clock,
    notifier: platform.notifier,
    logger: platform.logger,
    pollMs: config.webhookPollMs,
  });
  // Settled deliveries are kept as long as the events they carry.
  const retention: RetentionRule = {
    name: 'webhook-deliveries',
    async deleteExpired(now, limit) {
      const batch = await service.deleteExpired(now, limit);
      return { deleted: { webhook_deliveries: batch.deleted }, more: batch.more };
    },
  };
  return { service, routes: webhooksRoutes(service), workers: [fanOut, delivery], retention: [retention] };
}
