import type { Platform } from '../platform.js';
import type { RetentionRule } from '../kernel/ports.js';
import type { Worker } from '../workers/worker.js';
import { CredentialWatch } from './credential-watch.js';
import type { AuthService } from './service.js';
import type { SessionService } from './sessions.js';

/**
 * The auth domain's background work on a server (the CLI builds the domain without it): the
 * credential watch.
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
  ];
}

/** What auth lets go of: signatures past their replay window, expired sessions, sign-in failures past their window. */
export function authRetention(auth: { service: AuthService; sessions: SessionService }): RetentionRule[] {
  return [
    {
      name: 'signature-nonces',
      async deleteExpired(now, limit) {
        const nonces = await auth.service.forgetExpiredSignatures(now, limit);
        return { deleted: { signature_nonces: nonces }, more: nonces === limit };
      },
    },
    {
      name: 'sessions',
      async deleteExpired(now, limit) {
        const ended = await auth.sessions.deleteExpired(now, limit);
        return { deleted: { auth_sessions: ended.sessions, sign_in_failures: ended.failures }, more: ended.sessions === limit };
      },
    },
  ];
}
