/**
 * Request budgets per principal. Behind an interface so cluster mode shares them without
 * touching callers (cluster/rate-limiter.ts: slices leased from a counter in PostgreSQL); the
 * in-memory fixed window below is exact for one node and cheap (one Map lookup per request).
 */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Epoch ms when the current window ends. */
  resetAt: number;
}

export interface RateLimitDecision extends RateLimitState {
  allowed: boolean;
}

export interface RateLimiter {
  readonly enabled: boolean;
  /**
   * Counts one request against `key` and says whether it is allowed. An in-memory limiter
   * answers at once (every request pays this, so no promise when none is needed); a shared
   * store answers with a promise.
   */
  consume(key: string): RateLimitDecision | Promise<RateLimitDecision>;
  /** The budget of `key` without spending any of it. */
  peek(key: string): Promise<RateLimitState>;
}

interface Window {
  start: number;
  count: number;
}

export class FixedWindowRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly windowMs: number;
  private lastSweep = 0;

  constructor(
    private readonly limit: number,
    windowSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    this.windowMs = windowSeconds * 1000;
  }

  get enabled(): boolean {
    return this.limit > 0;
  }

  private current(key: string, now: number): Window {
    const start = Math.floor(now / this.windowMs) * this.windowMs;
    let window = this.windows.get(key);
    if (!window || window.start !== start) {
      window = { start, count: 0 };
      this.windows.set(key, window);
    }
    if (start !== this.lastSweep) this.sweep(start);
    return window;
  }

  /** Drops counters of finished windows once per window, so idle principals cost nothing. */
  private sweep(start: number): void {
    this.lastSweep = start;
    for (const [key, window] of this.windows) if (window.start < start) this.windows.delete(key);
  }

  consume(key: string): RateLimitDecision {
    const window = this.current(key, this.now());
    const allowed = !this.enabled || window.count < this.limit;
    if (allowed) window.count += 1;
    const state = this.state(window);
    return { limit: state.limit, remaining: state.remaining, resetAt: state.resetAt, allowed };
  }

  async peek(key: string): Promise<RateLimitState> {
    return this.state(this.current(key, this.now()));
  }

  private state(window: Window): RateLimitState {
    return {
      limit: this.limit,
      remaining: this.enabled ? Math.max(0, this.limit - window.count) : 0,
      resetAt: window.start + this.windowMs,
    };
  }
}
