import { describe, expect, it } from 'vitest';
import { IN_FLIGHT_CHECK_MS, nextDeliveryCheck, type DeliveryTiming } from '../../console/src/delivery-refresh.js';

const now = Date.parse('2030-01-01T12:00:00.000Z');
const at = (ms: number) => new Date(now + ms).toISOString();
const settled: DeliveryTiming = { status: 'delivered', attempts: 1, latency_ms: 12, next_attempt_at: null };

describe("a webhook delivery log's refresh", () => {
  it('stops once every delivery is settled', () => {
    expect(nextDeliveryCheck([], now)).toBe(false);
    expect(nextDeliveryCheck([settled, { ...settled, status: 'failed' }], now)).toBe(false);
  });

  it('looks again soon at an attempt in flight, whatever its lease says, or one that is due', () => {
    expect(nextDeliveryCheck([settled, { status: 'pending', attempts: 1, latency_ms: null, next_attempt_at: at(40_000) }], now)).toBe(IN_FLIGHT_CHECK_MS);
    expect(nextDeliveryCheck([{ status: 'pending', attempts: 0, latency_ms: null, next_attempt_at: at(-5) }], now)).toBe(IN_FLIGHT_CHECK_MS);
  });

  it('waits for the soonest retry, a moment past its time', () => {
    const retries = [
      { status: 'pending', attempts: 2, latency_ms: 30, next_attempt_at: at(60_000) },
      { status: 'pending', attempts: 1, latency_ms: 25, next_attempt_at: at(10_000) },
    ] as const;
    expect(nextDeliveryCheck(retries, now)).toBe(11_000);
  });
});
