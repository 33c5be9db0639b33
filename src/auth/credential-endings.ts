import { autocommit, type Tx } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import type { Notifier } from '../kernel/notifier.js';
import type { AuthStore } from './store.js';

/**
 * Channel on which the end of a credential (an API key revoked, a session ended, the keys and
 * sessions of a user disabled) tells every node to forget it at once.
 */
const ENDED_CHANNEL = 'auth:key-revoked';
/** The longest an ending waits to hear its own announcements (a lost notice must not hang it). */
const HEAR_ENDING_MS = 2000;

/** The work of `CredentialEndings.endingCredentials`: `end` announces credentials ending in its transaction. */
export type EndingWork<T> = (tx: Tx, end: (credentials: readonly string[]) => Promise<void>) => Promise<T>;

/**
 * The end of credentials (API keys, sessions), on every node at once: whoever ends one announces
 * it in its transaction, and each node hands what it hears to its listeners (the credential
 * caches, the open connections), so a credential ended anywhere stops working everywhere on the
 * next request.
 */
export class CredentialEndings {
  private readonly listeners = new Set<(credential: string) => void>();
  private readonly stopListening: () => void;

  constructor(private readonly deps: { store: AuthStore; clock: Clock; notifier: Notifier }) {
    this.stopListening = deps.notifier.listen(ENDED_CHANNEL, (credential) => this.forget(credential));
  }

  close(): void {
    this.stopListening();
    this.listeners.clear();
  }

  /** Calls `listener` with each credential (key, session) ended that this node hears of (possibly twice). */
  onEnded(listener: (credential: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private forget(credential: string): void {
    for (const listener of this.listeners) listener(credential);
  }

  /** Those of the given credentials (key and session ids) that no longer authenticate. */
  async endedAmong(credentials: string[]): Promise<string[]> {
    const { store } = this.deps;
    const keys = credentials.filter((id) => id.startsWith('key_'));
    const sessions = credentials.filter((id) => !id.startsWith('key_'));
    const ended = keys.length > 0 ? await store.endedKeysAmong(autocommit, keys) : [];
    if (sessions.length === 0) return ended;
    const live = new Set(await store.liveSessionsAmong(autocommit, sessions, this.deps.clock.now()));
    return [...ended, ...sessions.filter((id) => !live.has(id))];
  }

  /**
   * Runs `work` in a transaction in which `end` announces credentials ending: PostgreSQL
   * delivers the announcement to every node at commit, and a crash cannot commit the one
   * without the other. Resolves once this node has heard them too: by then the other nodes'
   * listeners have been sent them, so a request the caller makes next to another node finds
   * them gone (an ending is immediate).
   */
  async endingCredentials<T>(work: EndingWork<T>): Promise<T> {
    const { notifier } = this.deps;
    const announced = new Set<string>();
    const heard = new Set<string>();
    let allHeard = () => {};
    const stop = notifier.listen(ENDED_CHANNEL, (credential) => {
      heard.add(credential);
      if ([...announced].every((id) => heard.has(id))) allHeard();
    });
    try {
      const result = await this.deps.store.inTransaction((tx) =>
        work(tx, async (credentials) => {
          for (const credential of credentials) {
            announced.add(credential);
            await notifier.notifyIn(tx, ENDED_CHANNEL, credential);
          }
        }),
      );
      if ([...announced].some((id) => !heard.has(id))) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, HEAR_ENDING_MS);
          allHeard = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      for (const credential of announced) this.forget(credential);
      return result;
    } finally {
      stop();
    }
  }
}
