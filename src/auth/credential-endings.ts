import { autocommit, type Tx } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import type { Notifier } from '../kernel/notifier.js';
import type { NodeRegistry } from '../kernel/ports.js';
import type { AuthStore } from './store.js';

/**
 * Channel on which the end of a credential (an API key revoked, a session ended, the keys and
 * sessions of a user disabled) tells every node to forget it at once.
 */
const ENDED_CHANNEL = 'auth:key-revoked';
/** Channel on which a node says it has forgotten an ended credential (payload: `<node id> <credential>`). */
const FORGOTTEN_CHANNEL = 'auth:credential-forgotten';
/** The longest an ending waits for the nodes to forget what it ended (a lost notice or a dead node must not hang it). */
const HEAR_ENDING_MS = 2000;

/** The work of `CredentialEndings.endingCredentials`: `end` announces credentials ending in its transaction. */
export type EndingWork<T> = (tx: Tx, end: (credentials: readonly string[]) => Promise<void>) => Promise<T>;

/**
 * The end of credentials (API keys, sessions), on every node at once: whoever ends one announces
 * it in its transaction, and each node hands what it hears to its listeners (the credential
 * caches, the open connections) and says it has forgotten it, so a credential ended anywhere
 * stops working everywhere on the next request.
 */
export class CredentialEndings {
  private readonly listeners = new Set<(credential: string) => void>();
  private readonly stopListening: () => void;
  /** The cluster's nodes (once the server has built them; never in the CLI): an ending waits for each live one. */
  private nodes: NodeRegistry | null = null;

  constructor(private readonly deps: { store: AuthStore; clock: Clock; notifier: Notifier }) {
    this.stopListening = deps.notifier.listen(ENDED_CHANNEL, (credential) => {
      this.forget(credential);
      if (this.nodes) void deps.notifier.notify(FORGOTTEN_CHANNEL, `${this.nodes.nodeId} ${credential}`).catch(() => undefined);
    });
  }

  /** Endings wait until every live node of `nodes` has forgotten what they ended, and this node says when it has. */
  confirmWith(nodes: NodeRegistry): void {
    this.nodes = nodes;
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
   * without the other. Resolves once every live node has said it forgot them (without a node
   * registry: once this process has heard them), so a request the caller makes next to any node
   * finds them gone (an ending is immediate). Hearing its own announcement would not do: the
   * other nodes are sent theirs at the same moment, but may read it later than this one.
   */
  async endingCredentials<T>(work: EndingWork<T>): Promise<T> {
    const { notifier } = this.deps;
    const nodes = this.nodes;
    const announced = new Set<string>();
    // `<node id> <credential>` for each node that forgot one ('' for this process without a registry).
    const forgotten = new Set<string>();
    let waitedFor = [nodes?.nodeId ?? ''];
    const allForgotten = () => [...announced].every((credential) => waitedFor.every((node) => forgotten.has(`${node} ${credential}`)));
    let settle = () => {};
    const heard = (said: string) => {
      forgotten.add(said);
      if (allForgotten()) settle();
    };
    const stop = nodes
      ? notifier.listen(FORGOTTEN_CHANNEL, heard)
      : notifier.listen(ENDED_CHANNEL, (credential) => heard(` ${credential}`));
    try {
      const result = await this.deps.store.inTransaction((tx) =>
        work(tx, async (credentials) => {
          for (const credential of credentials) {
            announced.add(credential);
            await notifier.notifyIn(tx, ENDED_CHANNEL, credential);
          }
        }),
      );
      // Nodes that share no notifier learn of endings from the database file, not from notices.
      if (nodes && notifier.spansNodes && announced.size > 0) {
        const live = await nodes.liveNodeIds().catch(() => []);
        waitedFor = [...new Set([nodes.nodeId, ...live])];
      }
      if (!allForgotten()) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, HEAR_ENDING_MS);
          settle = () => {
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
