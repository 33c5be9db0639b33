import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FixedWindowRateLimiter } from '../../src/kernel/rate-limiter.js';

describe('FixedWindowRateLimiter', () => {
  it('allows exactly `limit` requests per window and resets at the window edge', async () => {
    let now = 60_000 * 10 + 5;
    const limiter = new FixedWindowRateLimiter(2, 60, () => now);
    expect((await limiter.consume('a')).allowed).toBe(true);
    const second = await limiter.consume('a');
    expect(second).toMatchObject({ allowed: true, remaining: 0, resetAt: 60_000 * 11 });
    expect((await limiter.consume('a')).allowed).toBe(false);
    expect((await limiter.consume('b')).allowed).toBe(true);
    now = 60_000 * 11;
    expect(await limiter.peek('a')).toMatchObject({ remaining: 2 });
    expect((await limiter.consume('a')).allowed).toBe(true);
  });

  it('never allows more than the limit in any window, whatever the arrival times', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 300_000 }), { maxLength: 200 }),
        async (limit, offsets) => {
          let now = 0;
          const limiter = new FixedWindowRateLimiter(limit, 60, () => now);
          const allowedPerWindow = new Map<number, number>();
          for (const t of [...offsets].sort((a, b) => a - b)) {
            now = t;
            const decision = await limiter.consume('k');
            if (decision.allowed) {
              const window = Math.floor(t / 60_000);
              allowedPerWindow.set(window, (allowedPerWindow.get(window) ?? 0) + 1);
            }
            expect(decision.remaining).toBeGreaterThanOrEqual(0);
          }
          for (const count of allowedPerWindow.values()) expect(count).toBeLessThanOrEqual(limit);
        },
      ),
    );
  });
});
