import type { Platform } from '../platform.js';
import { LoopWorker } from '../workers/loop-worker.js';
import type { Worker } from '../workers/worker.js';
import { CredentialWatch } from './credential-watch.js';
import type { AuthService } from './service.js';
import type { SessionService } from './sessions.js';

/** How often remembered signatures and ended sessions are deleted. */
const SWEEP_INTERVAL_MS = 60_000;

/**
 * The auth domain's background work on a server (the CLI builds the domain without it): the
 * credential watch, and the sweeps of signatures past their replay window and of ended sessions.
 */
export function createAuthWorkers(auth: { service: AuthService; sessions: SessionService }, platform: Platform): Worker[] {
  const { logger } = platform;
  return [
    new CredentialWatch({
      auth: auth.service,
      connections: platform.connections,
      notifier: platform.notifier,
      dataVersion: platform.database.dataVersion,
      logger,
    }),
    // The sweep answers how many it deleted, which is no delay.
    new LoopWorker({
      name: 'signature-sweeper',
      intervalMs: SWEEP_INTERVAL_MS,
      run: () => auth.service.sweepSignatures().then(() => undefined),
      logger,
    }),
    new LoopWorker({ name: 'session-sweeper', intervalMs: SWEEP_INTERVAL_MS, run: () => auth.sessions.sweep(), logger }),
  ];
}
