import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Notifier } from '../kernel/notifier.js';
import { NodeListeners } from './node-listeners.js';
import type { Tx } from '../kernel/tx.js';
import { openTransaction } from './tx.js';

const PG_CHANNEL = 'switchboard';
/** The logical channel on which notifiers say they listen (payload: the notifier's id). */
const HELLO = 'notifier:hello';
/** How often a notifier says hello, by default. */
export const HELLO_MS = 5_000;
// NOTIFY payloads are capped at 8000 bytes by PostgreSQL; ours carry ids, not documents.
const MAX_PAYLOAD = 7900;

/**
 * Cluster mode: one PostgreSQL channel carries every logical channel as JSON `{c, p}`, so one
 * LISTEN connection serves all listeners of this node. The connection reconnects with
 * exponential backoff (250 ms → 10 s); while it is down, consumers fall back to their polling,
 * and once it is back every `onResume` handler runs, so waiting long polls and workers look at
 * the database at once instead of waiting for a notice that was sent while nobody listened.
 *
 * A node alone on its database hands notices to its own listeners without a NOTIFY (a round
 * trip per send, and PostgreSQL serializes the commits of transactions that NOTIFY). Alone
 * means: listening for two hello periods, and no other notifier said hello for three. Each
 * notifier says hello when it starts listening and every period after, and answers a hello it
 * did not expect at once, so a node that joins is heard within a round trip. Notices inside a
 * transaction (`notifyIn`) still go through PostgreSQL, which holds them until the commit.
 */
export class PostgresNotifier implements Notifier {
  readonly spansNodes = true;
  private readonly listeners = new NodeListeners();
  private client: pg.Client | null = null;
  private connections = 0;
  private closed = false;
  private retryDelay = 250;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly ready: Promise<void>;
  private readonly id = randomUUID();
  private listeningSince = Infinity;
  private peerHeardAt = -Infinity;
  private readonly peers = new Set<string>();
  private readonly helloTimer: NodeJS.Timeout;

  constructor(
    private readonly connectionString: string,
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
    private readonly helloMs = HELLO_MS,
  ) {
    this.ready = this.connect();
    this.listeners.listen(HELLO, (peer) => this.heard(peer));
    this.helloTimer = setInterval(() => void this.hello(), helloMs);
    this.helloTimer.unref();
  }

  /** No other notifier listens on this database: notices need not leave this process. */
  get alone(): boolean {
    const now = performance.now();
    return this.client !== null && now - this.listeningSince >= 2 * this.helloMs && now - this.peerHeardAt > 3 * this.helloMs;
  }

  private heard(peer: string): void {
    if (peer === this.id) return;
    this.peerHeardAt = performance.now();
    if (this.peers.has(peer)) return;
    // Every notifier that ever started here; a day of restarts is far below this.
    if (this.peers.size >= 10_000) this.peers.clear();
    this.peers.add(peer);
    void this.hello();
  }

  private async hello(): Promise<void> {
    if (this.client === null) return;
    await this.pool.query('SELECT pg_notify($1, $2)', [PG_CHANNEL, this.body(HELLO, this.id)]).catch(() => undefined);
  }

  get epoch(): number | null {
    return this.client === null ? null : this.connections;
  }

  get transport(): 'listening' | 'reconnecting' {
    return this.client === null ? 'reconnecting' : 'listening';
  }

  /** Resolves once the first LISTEN is in place (or the first attempt failed). */
  whenReady(): Promise<void> {
    return this.ready;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (msg) => {
      if (msg.channel !== PG_CHANNEL || msg.payload === undefined) return;
      try {
        const { c, p } = JSON.parse(msg.payload) as { c: string; p: string };
        this.listeners.deliver(c, p);
      } catch {
        this.logger.warn({ payload: msg.payload }, 'ignoring malformed notification');
      }
    });
    client.on('error', (err) => {
      this.logger.warn({ err }, 'notifier connection error; reconnecting');
      this.scheduleReconnect(client);
    });
    client.on('end', () => this.scheduleReconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${PG_CHANNEL}`);
      if (this.closed) {
        // close() ran while we were connecting: nothing will end this client but us.
        client.removeAllListeners('end');
        await client.end().catch(() => undefined);
        return;
      }
      this.client = client;
      this.connections++;
      this.retryDelay = 250;
      this.listeningSince = performance.now();
      void this.hello();
      if (this.connections > 1) {
        this.logger.info({ connections: this.connections }, 'notifier listening again; rescanning');
        this.listeners.resumed();
      }
    } catch (err) {
      this.logger.warn({ err }, 'notifier could not LISTEN; retrying');
      this.scheduleReconnect(client);
    }
  }

  private scheduleReconnect(failed: pg.Client): void {
    if (this.closed || this.retryTimer !== null) return;
    if (this.client === failed) {
      this.client = null;
      this.listeningSince = Infinity;
    }
    failed.removeAllListeners('end');
    void failed.end().catch(() => undefined);
    const delay = this.retryDelay;
    this.retryDelay = Math.min(this.retryDelay * 2, 10_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  async notify(channel: string, payload = ''): Promise<void> {
    // Delivered a turn later, as the round trip did: a listener never runs inside the notifying call.
    if (this.alone) return void setImmediate(() => this.listeners.deliver(channel, payload));
    await this.pool.query('SELECT pg_notify($1, $2)', [PG_CHANNEL, this.body(channel, payload)]);
  }

  async notifyIn(tx: Tx, channel: string, payload = ''): Promise<void> {
    const trx = openTransaction(tx);
    if (trx === null) return this.notify(channel, payload);
    await sql`SELECT pg_notify(${PG_CHANNEL}, ${this.body(channel, payload)})`.execute(trx);
  }

  private body(channel: string, payload: string): string {
    const body = JSON.stringify({ c: channel, p: payload });
    if (Buffer.byteLength(body) > MAX_PAYLOAD) throw new Error(`notification payload too large on ${channel}`);
    return body;
  }

  listen(channel: string, handler: (payload: string) => void): () => void {
    return this.listeners.listen(channel, handler);
  }

  onResume(handler: () => void): () => void {
    return this.listeners.onResume(handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.helloTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.ready;
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
    await this.listeners.close();
  }
}
