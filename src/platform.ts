import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/database.js';
import type { Clock } from './kernel/clock.js';
import type { Expressions } from './kernel/expression-pool.js';
import type { DomainMetrics } from './kernel/metrics.js';
import type { Notifier } from './kernel/notifier.js';
import type { OpenConnections } from './kernel/open-connections.js';
import type { AuditTrail } from './kernel/ports.js';
import type { RateLimiter } from './kernel/rate-limiter.js';

/** What every domain may be built from (services take plain dependency objects). */
export interface Platform {
  readonly config: Config;
  readonly database: DatabaseHandle;
  readonly clock: Clock;
  readonly notifier: Notifier;
  readonly logger: Logger;
  /** Base of every URL the server hands out (SWITCHBOARD_PUBLIC_URL, else the listen address). */
  readonly publicUrl: () => string;
  /** Aborted when the app starts closing: long polls and loops end early on it. */
  readonly shutdown: AbortSignal;
  /** Request budgets per principal (messaging's rate-limit status reads the same counters). */
  readonly limiter: RateLimiter;
  /** Counters and histograms of what the domains do (GET /metrics). */
  readonly metrics: DomainMetrics;
  /** JSONata evaluation off the event loop, within a time, memory and result-size budget. */
  readonly expressions: Expressions;
  /** The long-lived connections open on this node, by credential: ended when it stops being valid. */
  readonly connections: OpenConnections;
  /** The audit log: each service records its changes in the transaction that makes them. */
  readonly audit: AuditTrail;
}
