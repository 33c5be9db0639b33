/**
 * What a background worker has done since the node started, as the worker keeps it (the
 * cluster nodes answer, /readyz and /metrics read it). Times are the wall clock's epoch ms: the
 * loop runs on the process's own timers, whatever clock the domains are given.
 */
export interface WorkerStatus {
  readonly name: string;
  /** Passes finished, failed ones included. */
  readonly runs: number;
  /** Passes that threw. */
  readonly failures: number;
  /** Passes that threw since the last one that succeeded. */
  readonly consecutiveFailures: number;
  /** The last finished pass: when it started and how long it took. */
  readonly lastRun: { readonly startedAt: number; readonly durationMs: number } | null;
  /** When the pass under way started; null between passes (an old one is a pass that hangs). */
  readonly runningSince: number | null;
  /** The last pass that threw, kept after later ones succeed. */
  readonly lastError: { readonly message: string; readonly at: number } | null;
  /** Time spent in passes, all told. */
  readonly busySeconds: number;
}

/** A named piece of background work: started after the server listens, stopped before the database closes. */
export interface Worker {
  readonly name: string;
  start(): void;
  stop(): Promise<void>;
  /** What it has done so far; a worker built on another reports that one's. */
  status(): WorkerStatus;
}
