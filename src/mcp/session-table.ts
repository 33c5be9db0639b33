import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface McpSession {
  transport: StreamableHTTPServerTransport;
  /** The credential that initialized the session (an API key id, or `signed:<agent>`): no other may use it. */
  credential: string;
  lastSeen: number;
  /** Takes the session out of the open connections (it ends with its key's revocation). */
  release: () => void;
}

/**
 * The open MCP sessions of a node, at most `perCredential` per credential: each holds a server
 * of its own (one key opening 3,000 sessions took 112 MB, kept for the idle limit), so a
 * credential's new session evicts its least recently used one, whose next request gets the
 * 404 that tells a client to initialize again.
 */
export class McpSessionTable {
  private readonly byId = new Map<string, McpSession>();
  /** Each credential's sessions, least recently used first (a use moves a session to the end). */
  private readonly byCredential = new Map<string, Map<string, McpSession>>();

  constructor(private readonly perCredential: number) {}

  get size(): number {
    return this.byId.size;
  }

  values(): IterableIterator<McpSession> {
    return this.byId.values();
  }

  /** The session; undefined when there is none (ended, evicted, another node's). */
  get(id: string): McpSession | undefined {
    return this.byId.get(id);
  }

  /** Marks the session as used now: the last of its credential's to be evicted. */
  touch(id: string, now: number): void {
    const session = this.byId.get(id);
    if (!session) return;
    session.lastSeen = now;
    const mine = this.byCredential.get(session.credential)!;
    mine.delete(id);
    mine.set(id, session);
  }

  /** Adds a session; returns those it evicted from the table (their transports are the caller's to close). */
  add(id: string, session: McpSession): McpSession[] {
    const evicted: McpSession[] = [];
    let mine = this.byCredential.get(session.credential);
    // Oldest first; delete() drops the credential's map once it is empty, so get it again after.
    for (const [oldest, old] of mine ?? []) {
      if (mine!.size < this.perCredential) break;
      this.delete(oldest);
      evicted.push(old);
    }
    mine = this.byCredential.get(session.credential);
    if (!mine) this.byCredential.set(session.credential, (mine = new Map()));
    this.byId.set(id, session);
    mine.set(id, session);
    return evicted;
  }

  /** The sessions not used since `cutoff` (their transports are the caller's to close). */
  idleSince(cutoff: number): McpSession[] {
    return [...this.byId.values()].filter((session) => session.lastSeen < cutoff);
  }

  delete(id: string): void {
    const session = this.byId.get(id);
    if (!session) return;
    this.byId.delete(id);
    const mine = this.byCredential.get(session.credential)!;
    mine.delete(id);
    if (mine.size === 0) this.byCredential.delete(session.credential);
  }

  clear(): void {
    this.byId.clear();
    this.byCredential.clear();
  }
}
