import { describe, expect, it } from 'vitest';
import {
  AWAIT_DELIVERY_MS,
  awaitsDelivery,
  IN_FLIGHT_CHECK_MS,
  nextDeliveryCheck,
  type DeliveryTiming,
} from '../../console/src/settings/delivery-refresh.js';

const now = Date.parse('2030-01-01T12:00:00.000Z');
const at = (ms: number) => new Date(now + ms).toISOString();
const settled: DeliveryTiming = { event_id: 'evt_1', status: 'delivered', attempts: 1, latency_ms: 12, next_attempt_at: null };

describe("a webhook delivery log's refresh", () => {
  it('stops once every delivery is settled', () => {
    expect(nextDeliveryCheck([], now)).toBe(false);
    expect(nextDeliveryCheck([settled, { ...settled, status: 'failed' }], now)).toBe(false);
  });

  it('looks again soon at an attempt in flight, whatever its lease says, or one that is due', () => {
    expect(
      nextDeliveryCheck(
        [settled, { event_id: 'evt_2', status: 'pending', attempts: 1, latency_ms: null, next_attempt_at: at(40_000) }],
        now,
      ),
    ).toBe(IN_FLIGHT_CHECK_MS);
    expect(nextDeliveryCheck([{ event_id: 'evt_2', status: 'pending', attempts: 0, latency_ms: null, next_attempt_at: at(-5) }], now)).toBe(
      IN_FLIGHT_CHECK_MS,
    );
  });

  it('waits for the soonest retry, a moment past its time', () => {
    const retries = [
      { event_id: 'evt_2', status: 'pending', attempts: 2, latency_ms: 30, next_attempt_at: at(60_000) },
      { event_id: 'evt_3', status: 'pending', attempts: 1, latency_ms: 25, next_attempt_at: at(10_000) },
    ] as const;
    expect(nextDeliveryCheck(retries, now)).toBe(11_000);
  });

  it('looks again soon after an event of its types until the log shows its delivery, for a bounded time', () => {
    const webhook = { types: ['task.*'], enabled: true, created_at: at(-60_000) };
    const event = { id: 'evt_9', type: 'task.created', created_at: at(-1_000) };
    expect(awaitsDelivery([event], webhook, [settled], now)).toBe(true);
    expect(nextDeliveryCheck([settled], now, true)).toBe(IN_FLIGHT_CHECK_MS);
    // Shown, of other types, too old, before the webhook existed, or the webhook is disabled: nothing is awaited.
    expect(awaitsDelivery([event], webhook, [settled, { ...settled, event_id: 'evt_9' }], now)).toBe(false);
    expect(awaitsDelivery([{ ...event, type: 'run.completed' }], webhook, [], now)).toBe(false);
    expect(awaitsDelivery([{ ...event, created_at: at(-AWAIT_DELIVERY_MS - 1) }], webhook, [], now)).toBe(false);
    expect(awaitsDelivery([event], { ...webhook, created_at: at(0) }, [], now)).toBe(false);
    expect(awaitsDelivery([event], { ...webhook, enabled: false }, [], now)).toBe(false);
  });
});
