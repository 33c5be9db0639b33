import { BoundedMap } from './bounded-map.js';

/** Why a connection is ended: said to the client (a WebSocket close reason, at most 123 bytes). */
export type EndReason = string;

/** Credentials told ended that `hold` still refuses: covers a connection opened just before the news. */
const REMEMBERED_ENDINGS = 1024;

/**
 * The long-lived connections open on this node (agent channels, event streams, A2A streams, MCP
 * sessions), by the credential (API key id) that opened them: the one place that ends every
 * connection of a credential that stopped being valid. A request checks its credential each
 * time; a connection checked it once, at its start, so it registers here until it closes.
 */
export class OpenConnections {
  private readonly byCredential = new Map<string, Set<(reason: EndReason) => void>>();
  private readonly ended = new BoundedMap<string, EndReason>(REMEMBERED_ENDINGS);

  /**
   * Registers a connection opened with `credential` (null: one no revocation can reach, such as
   * a signed request's); `end` closes it. Returns what the connection calls when it closes. A
   * credential ended a moment ago (its connection authenticated before the news arrived) is
   * ended again at once.
   */
  hold(credential: string | null, end: (reason: EndReason) => void): () => void {
    if (credential === null) return () => undefined;
    let ends = this.byCredential.get(credential);
    if (!ends) this.byCredential.set(credential, (ends = new Set()));
    ends.add(end);
    const gone = this.ended.get(credential);
    if (gone !== undefined) queueMicrotask(() => this.end(credential, gone));
    return () => {
      ends.delete(end);
      if (ends.size === 0 && this.byCredential.get(credential) === ends) this.byCredential.delete(credential);
    };
  }

  /** Ends every connection `credential` opened; returns how many. */
  end(credential: string, reason: EndReason): number {
    this.ended.set(credential, reason);
    const ends = this.byCredential.get(credential);
    if (!ends) return 0;
    this.byCredential.delete(credential);
    for (const end of ends) end(reason);
    return ends.size;
  }

  /** The credentials that hold connections now (what a periodic check looks up). */
  credentials(): string[] {
    return [...this.byCredential.keys()];
  }

  /** Connections open now. */
  get size(): number {
    let count = 0;
    for (const ends of this.byCredential.values()) count += ends.size;
    return count;
  }
}
