/*
 * When a webhook's delivery log is read again while deliveries are under way: pure (no DOM),
 * unit-tested in test/console/delivery-refresh.test.ts.
 *
 * A new delivery follows an event of the webhook's types, so the log refreshes on those events
 * (useLiveRefresh). An attempt's outcome appends no event (a webhook on `webhook.>` would be told
 * of its own deliveries, without end), so while a delivery is pending the log is read again when
 * the server said something will change: soon while an attempt is in flight or due, else at its
 * next retry.
 */

export interface DeliveryTiming {
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  latency_ms: number | null;
  next_attempt_at: string | null;
}

/** How soon an attempt in flight or due is looked at again. */
export const IN_FLIGHT_CHECK_MS = 2_000;
/** After a retry's time, the worker needs a moment to take it. */
const RETRY_MARGIN_MS = 1_000;

/** Ms until the log should be read again, or false when every delivery shown is settled. */
export function nextDeliveryCheck(deliveries: readonly DeliveryTiming[], now: number): number | false {
  let soonest: number | false = false;
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
