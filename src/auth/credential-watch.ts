import type { Logger } from 'pino';
import type { Notifier } from '../kernel/notifier.js';
import type { OpenConnections } from '../kernel/open-connections.js';
import { LoopWorker } from '../workers/loop-worker.js';
import type { Worker, WorkerStatus } from '../workers/worker.js';
import type { AuthService } from './service.js';

/** How often the watch looks whether it must check the open connections' keys in the database. */
const TICK_MS = 1000;
/** The longest between two checks of every open connection's key, whatever was heard. */
const FULL_CHECK_MS = 60_000;
/** Credentials looked up per statement. */
const CHECK_BATCH = 500;

/** What a connection is told when its credential ends: a key revoked (or its user disabled), or a session ended. */
function endReason(credential: string): string {
  return credential.startsWith('key_') ? 'API key revoked' : 'Session ended';
}

/**
 * Ends the open connections (OpenConnections) of credentials that stopped being valid (API keys
 * revoked or whose user was disabled, sessions ended), on this node, whoever ended them:
 * - a revocation this node makes or hears of through the notifier (another node's, or the CLI's
 *   on PostgreSQL, which announces it in the revoking transaction like a server does) ends them
 *   at once;
 * - the keys of every open connection are looked up in the database when a notice may have been
 *   lost (the notifier resumed), when another process wrote to the SQLite file (the CLI there has
 *   no way to reach this process but the file: `PRAGMA data_version`, read once a second, tells
 *   of its writes), and at least once a minute.
 */
export class CredentialWatch implements Worker {
  readonly name = 'credential-watch';
  private readonly loop: LoopWorker;
  private lookNow = true;
  private lastCheck = 0;
  private lastDataVersion: number | null = null;

  constructor(
    private readonly deps: {
      auth: AuthService;
      connections: OpenConnections;
      notifier: Notifier;
      /** SQLite's data version of the file (changes when another connection commits); null on PostgreSQL. */
      dataVersion: (() => number) | null;
      logger: Logger;
    },
  ) {
    this.loop = new LoopWorker({
      name: this.name,
      intervalMs: TICK_MS,
      logger: deps.logger,
      run: () => this.tick(),
      listen: (nudge) => this.listen(nudge),
    });
    this.lastDataVersion = deps.dataVersion?.() ?? null;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Revocations end their connections at once; a resume (notices may have been lost) has every key looked up. */
  private listen(nudge: () => void): () => void {
    const { auth, connections, notifier } = this.deps;
    const unrevoked = auth.onRevoked((credential) => connections.end(credential, endReason(credential)));
    const unresumed = notifier.onResume(() => {
      this.lookNow = true;
      nudge();
    });
    return () => {
      unrevoked();
      unresumed();
    };
  }

  status(): WorkerStatus {
    return this.loop.status();
  }

  private async tick(): Promise<void> {
    const version = this.deps.dataVersion?.() ?? null;
    const otherWriter = version !== this.lastDataVersion;
    this.lastDataVersion = version;
    if (!this.lookNow && !otherWriter && Date.now() - this.lastCheck < FULL_CHECK_MS) return;
    this.lookNow = false;
    this.lastCheck = Date.now();
    const credentials = this.deps.connections.credentials();
    try {
      for (let i = 0; i < credentials.length; i += CHECK_BATCH) {
        for (const ended of await this.deps.auth.endedAmong(credentials.slice(i, i + CHECK_BATCH)))
          this.deps.connections.end(ended, endReason(ended));
      }
    } catch (err) {
      // The database is away: look again on the next tick rather than in a minute.
      this.lookNow = true;
      throw err;
    }
  }
}
