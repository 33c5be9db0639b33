import type { Logger } from 'pino';
import type { RateLimitDecision, RateLimiter, RateLimitState } from '../kernel/rate-limiter.js';

/** The shared counter the budgets lease from (cluster/store.ts on PostgreSQL). */
export interface BudgetLedger {
  /** Adds `slice` to what is leased of `bucket` in the window; returns the total leased after it. */
  lease(bucket: string, windowStart: number, slice: number): Promise<number>;
  /** What is leased of `bucket` in the window. */
  leased(bucket: string, windowStart: number): Promise<number>;
}

/** One budget as this node sees it in the current window. */
interface Budget {
  windowStart: number;
  /** Requests leased to this node and not spent yet. */
  allowance: number;
  /** What the cluster had leased at this node's last lease (at most the limit). */
  leasedKnown: number;
  /** The last lease got less than it asked: nothing is left in this window, for anyone. */
  exhausted: boolean;
  leasing: Promise<void> | null;
  failure: unknown;
}

/**
 * One request budget per principal across the cluster, without a database round
 * trip on each request: each node leases a slice of a budget from a shared counter (one upsert
 * in `rate_limit_windows`) and spends it from memory. A busy budget is refilled in the background
 * when half a slice is left, so its requests never wait; a request waits for a lease only when
 * this node has none of that budget left (its first request in a window, or a budget too small
 * to prefetch). Once a lease comes back short the budget is spent for the window and the 429s
 * that follow are answered from memory too.
 *
 * Slices are 1% of the limit (at least 1): what nodes leased and have not spent is lost to the
 * others, at most a slice and a half per node, so N nodes enforce between the limit minus
 * 1.5 × N % of it and the limit exactly. With a slice of 1 (limits under 200) nothing is
 * prefetched: each request leases its own, and the budget is exact.
 */
export class SharedRateLimiter implements RateLimiter {
  private readonly budgets = new Map<string, Budget>();
  private readonly windowMs: number;
  private readonly slice: number;
  /** Refill in the background when the allowance falls to this (0: never, see the class comment). */
  private readonly refillAt: number;
  private lastSweep = 0;

  constructor(
    private readonly ledger: BudgetLedger,
    private readonly limit: number,
    windowSeconds: number,
    private readonly now: () => number,
    private readonly logger: Logger,
  ) {
    this.windowMs = windowSeconds * 1000;
    this.slice = Math.max(1, Math.ceil(limit / 100));
    this.refillAt = Math.floor(this.slice / 2);
  }

  get enabled(): boolean {
    return this.limit > 0;
  }

  private budget(key: string): Budget {
    const start = Math.floor(this.now() / this.windowMs) * this.windowMs;
    let budget = this.budgets.get(key);
    if (!budget || budget.windowStart !== start) {
      budget = { windowStart: start, allowance: 0, leasedKnown: 0, exhausted: false, leasing: null, failure: undefined };
      this.budgets.set(key, budget);
    }
    if (start !== this.lastSweep) {
      // Once per window: budgets of finished windows are dropped, so idle principals cost nothing.
      this.lastSweep = start;
      for (const [k, b] of this.budgets) if (b.windowStart < start && b.leasing === null) this.budgets.delete(k);
    }
    return budget;
  }

  private refill(key: string, budget: Budget): Promise<void> {
    budget.leasing ??= this.ledger.lease(key, budget.windowStart, this.slice).then(
      (total) => {
        const granted = Math.max(0, Math.min(this.slice, this.limit - (total - this.slice)));
        budget.allowance += granted;
        budget.leasedKnown = Math.min(this.limit, total);
        if (granted < this.slice) budget.exhausted = true;
        budget.failure = undefined;
        budget.leasing = null;
      },
      (err: unknown) => {
        budget.failure = err;
        budget.leasing = null;
      },
    );
    return budget.leasing;
  }

  consume(key: string): RateLimitDecision | Promise<RateLimitDecision> {
    if (!this.enabled) return { ...this.state(this.budget(key)), allowed: true };
    const budget = this.budget(key);
    if (budget.allowance > 0) {
      budget.allowance--;
      if (budget.allowance === this.refillAt && this.refillAt > 0 && !budget.exhausted) {
        void this.refill(key, budget).then(() => {
          if (budget.failure !== undefined) this.logger.warn({ err: budget.failure }, 'could not refill a rate-limit budget');
        });
      }
      return { ...this.state(budget), allowed: true };
    }
    if (budget.exhausted) return { ...this.state(budget), allowed: false };
    return this.refill(key, budget).then(() => {
      if (budget.allowance === 0 && !budget.exhausted && budget.failure !== undefined) throw budget.failure;
      return this.consume(key);
    });
  }

  /** The cluster's view: what no node has leased yet, plus what this node holds unspent. */
  async peek(key: string): Promise<RateLimitState> {
    const budget = this.budget(key);
    if (!this.enabled) return this.state(budget);
    const leased = await this.ledger.leased(key, budget.windowStart);
    budget.leasedKnown = Math.max(budget.leasedKnown, Math.min(this.limit, leased));
    return this.state(budget);
  }

  private state(budget: Budget): RateLimitState {
    return {
      limit: this.limit,
      remaining: this.enabled ? Math.max(0, this.limit - budget.leasedKnown) + budget.allowance : 0,
      resetAt: budget.windowStart + this.windowMs,
    };
  }
}
