import { EventEmitter } from 'node:events';
import { sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';

/**
 * Wake-ups between parts of the platform (a message arrived, a run advanced, an event was
 * published). A notification is only ever a latency hint: every consumer must also work from
 * what is in the database, so a lost notification costs latency, never correctness.
 * Publish after the transaction that made the change has committed, or pass that transaction
 * as `trx`: PostgreSQL then delivers the notification at commit (and drops it on rollback).
 */
export interface Notifier {
  /** Other processes hear this notifier (PostgreSQL's LISTEN/NOTIFY); else only this process does. */
  readonly spansNodes: boolean;
  /**
   * Changes whenever notifications may have been missed (each new LISTEN connection), so a
   * consumer that caches what notifications keep fresh drops what it cached under another
   * epoch; null while they cannot arrive (the connection is down): cache nothing then.
   */
  readonly epoch: number | null;
  notify(channel: string, payload?: string, trx?: Db): Promise<void>;
  listen(channel: string, handler: (payload: string) => void): () => void;
  close(): Promise<void>;
}

/** Embedded mode: one process, so an EventEmitter is the whole transport. */
export class InProcessNotifier implements Notifier {
  readonly spansNodes: boolean = false;
  readonly epoch: number | null = 0;
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  // With one SQLite connection, a listener woken inside a transaction cannot read until that
  // transaction ends (Kysely queues its query), so emitting at once is safe.
  async notify(channel: string, payload = '', _trx?: Db): Promise<void> {
    this.emitter.emit(channel, payload);
  }

  listen(channel: string, handler: (payload: string) => void): () => void {
    this.emitter.on(channel, handler);
    return () => this.emitter.off(channel, handler);
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}

const PG_CHANNEL = 'switchboard';
// NOTIFY payloads are capped at 8000 bytes by PostgreSQL; ours carry ids, not documents.
const MAX_PAYLOAD = 7900;

/**
 * Cluster mode: one PostgreSQL channel carries every logical channel as JSON `{c, p}`, so one
 * LISTEN connection serves all listeners of this node. The connection reconnects with
 * exponential backoff (250 ms → 10 s); while it is down, consumers fall back to their polling.
 */
export class PostgresNotifier implements Notifier {
  readonly spansNodes = true;
  private readonly local = new InProcessNotifier();
  private client: pg.Client | null = null;
  private connections = 0;
  private closed = false;
  private retryDelay = 250;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly ready: Promise<void>;

  constructor(
    private readonly connectionString: string,
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
  ) {
    this.ready = this.connect();
  }

  get epoch(): number | null {
    return this.client === null ? null : this.connections;
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
        void this.local.notify(c, p);
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
    } catch (err) {
      this.logger.warn({ err }, 'notifier could not LISTEN; retrying');
      this.scheduleReconnect(client);
    }
  }

  private scheduleReconnect(failed: pg.Client): void {
    if (this.closed || this.retryTimer !== null) return;
    if (this.client === failed) this.client = null;
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

  async notify(channel: string, payload = '', trx?: Db): Promise<void> {
    const body = JSON.stringify({ c: channel, p: payload });
    if (Buffer.byteLength(body) > MAX_PAYLOAD) throw new Error(`notification payload too large on ${channel}`);
    if (trx) await sql`SELECT pg_notify(${PG_CHANNEL}, ${body})`.execute(trx);
    else await this.pool.query('SELECT pg_notify($1, $2)', [PG_CHANNEL, body]);
  }

  listen(channel: string, handler: (payload: string) => void): () => void {
    return this.local.listen(channel, handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.ready;
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
    await this.local.close();
  }
}
