import { iso } from '../kernel/clock.js';
import type { Delivery, Webhook } from './schemas.js';
import type { DeliveryRow, WebhookRow } from './store.js';

/* What callers see of webhooks and their deliveries: the rows as the API answers them. */

export function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    types: JSON.parse(row.types) as string[],
    description: row.description,
    enabled: row.enabled === 1,
    disabled_reason: row.disabled_reason,
    failing_since: iso(row.failing_since),
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.last_status_code,
    latency_ms: row.latency_ms,
    error: row.error,
    response_body: row.response_body,
    next_attempt_at: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    last_attempt_at: iso(row.last_attempt_at),
    created_at: iso(row.created_at),
  };
}
