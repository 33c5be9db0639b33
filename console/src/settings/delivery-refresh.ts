import { matchesAny } from '../event-hub.js';

/*
 * When a webhook's delivery log is read again while deliveries are under way: pure (no DOM),
 * unit-tested in test/console/delivery-refresh.test.ts.
 *
 * Deliveries append no event (a webhook on `webhook.>` would be told of its own deliveries,
 * without end). A new one follows an event of the webhook's types, made by a worker a moment
 * after the event: so after such an event the log is read again until it shows its delivery (for
 * a bounded time). While a delivery is pending the log is read again when the server said
 * something will change: soon while an attempt is in flight or due, else at its next retry.
 */

export interface DeliveryTiming {
  event_id: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  latency_ms: number | null;
  next_attempt_at: string | null;
}

/** How soon an attempt in flight or due is looked at again. */
export const IN_FLIGHT_CHECK_MS = 2_000;
/** After a retry's time, the worker needs a moment to take it. */
const RETRY_MARGIN_MS = 1_000;

/** How long after an event of its types the log waits for that event's delivery to show (the worker polls every 5 s by default). */
export const AWAIT_DELIVERY_MS = 30_000;

interface SeenEvent {
  id: string;
  type: string;
  created_at: string;
}

interface WebhookTypes {
  types: readonly string[];
  enabled: boolean;
  created_at: string;
}

/** Whether a recent event of the webhook's types (from the live stream) has no delivery in the log yet. */
export function awaitsDelivery(
  events: readonly SeenEvent[],
  webhook: WebhookTypes,
  deliveries: readonly DeliveryTiming[],
  now: number,
): boolean {
  if (!webhook.enabled) return false;
  const shown = new Set(deliveries.map((delivery) => delivery.event_id));
  const since = Math.max(Date.parse(webhook.created_at), now - AWAIT_DELIVERY_MS);
  return events.some((event) => Date.parse(event.created_at) >= since && matchesAny(webhook.types, event.type) && !shown.has(event.id));
}

/**
 * Ms until the log should be read again, or false when every delivery shown is settled and none
 * is awaited (`awaiting`: see awaitsDelivery).
 */
export function nextDeliveryCheck(deliveries: readonly DeliveryTiming[], now: number, awaiting = false): number | false {
  let soonest: number | false = awaiting ? IN_FLIGHT_CHECK_MS : false;
  for (const delivery of deliveries) {
    if (delivery.status !== 'pending') continue;
    // Claimed and not measured yet: the attempt is in flight (its next_attempt_at is only its lease).
    const inFlight = delivery.attempts > 0 && delivery.latency_ms === null;
    const retryIn = delivery.next_attempt_at === null ? 0 : Date.parse(delivery.next_attempt_at) - now + RETRY_MARGIN_MS;
    const wait = inFlight ? IN_FLIGHT_CHECK_MS : Math.max(IN_FLIGHT_CHECK_MS, retryIn);
    soonest = soonest === false ? wait : Math.min(soonest, wait);
  }
  return soonest;
}
