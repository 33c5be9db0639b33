import type { Platform } from '../platform.js';
import type { DeliveryTargets, Inbox } from '../kernel/ports.js';
import { notificationsRoutes } from './routes.js';
import { NotificationsService } from './service.js';
import { NotificationsStore } from './store.js';

export { NotificationsService } from './service.js';
export * as notificationSchemas from './schemas.js';

/**
 * Notification channels: webhook, slack and email channels deliver through the webhooks
 * domain's delivery targets (its worker, retries and log); agent channels through the inbox.
 */
export function createNotificationsDomain(deps: { platform: Platform; targets: DeliveryTargets; inbox: Inbox }) {
  const { platform } = deps;
  const service = new NotificationsService({
    store: new NotificationsStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    audit: platform.audit,
    targets: deps.targets,
    inbox: deps.inbox,
    metrics: platform.metrics,
    smtpConfigured: platform.config.smtpUrl !== null,
    publicUrl: platform.publicUrl,
  });
  return { service, routes: notificationsRoutes(service) };
}
