import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Notifier } from '../kernel/notifier.js';
import { NodeListeners } from './node-listeners.js';
import type { Db } from './database.js';
import type { Tx } from '../kernel/tx.js';
import { openTransaction } from './tx.js';

/** How often every node reads new notices (SWITCHBOARD_PG_LISTEN=off: no LISTEN/NOTIFY). */
export const POLL_MS = 250;
/**
 * Each poll reads the notices of this last stretch of the database's clock and delivers those
 * the previous poll did not return. A window, not a cursor on `seq`: sequence numbers are handed
 * out at insert, so a transaction can commit a lower one after a higher one was read. A
 * transaction that commits more than this after its notice's insert is heard by nobody, which
 * costs latency only (every consumer also works from the database).
 */
const WINDOW_MS = 2_000;
/** Notices older than this are deleted (by any node, every CLEANUP_EVERY polls). */
const RETAIN_MS = 60_000;
const CLEANUP_EVERY = 40;

const NOW_MS = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/**
 * The notifier for PostgreSQL without LISTEN (SWITCHBOARD_PG_LISTEN=off, for PgBouncer in
 * transaction mode, which hands each transaction any server connection, so a LISTEN is heard on
 * a connection this node no longer holds). A notice is a row of `cluster_notices`, inserted in the
 * notifying transaction (so it appears at commit, and not on rollback); every node reads the
 * last two seconds' rows every 250 ms: one query per node per poll, whatever the number of long
 * polls and workers waiting. `epoch` is always null: a revocation could be heard 250 ms late,
 * so the API-key cache is off and every request looks its key up.
 */
export class PollingNotifier implements Notifier {
  readonly spansNodes = true;
  readonly epoch: number | null = null;
  readonly transport = 'polling';
  private readonly listeners = new NodeListeners();
  /** The seqs the last poll returned (null before the first poll: old notices are not delivered). */
  private seen: Set<number> | null = null;
  private failing = false;
  private polls = 0;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {
    this.schedule(0);
  }

  private schedule(delay: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.polling = this.poll().finally(() => {
        this.polling = null;
        this.schedule(POLL_MS);
      });
    }, delay);
  }

  private async poll(): Promise<void> {
    let rows: { seq: number; channel: string; payload: string }[];
    try {
      rows = await this.db
        .selectFrom('cluster_notices')
        .select(['seq', 'channel', 'payload'])
        .where('created_at', '>', sql<number>`${NOW_MS} - ${WINDOW_MS}`)
        .orderBy('seq')
        .execute();
      if (++this.polls % CLEANUP_EVERY === 0) {
        await this.db
          .deleteFrom('cluster_notices')
          .where('created_at', '<', sql<number>`${NOW_MS} - ${RETAIN_MS}`)
          .execute();
      }
    } catch (err) {
      if (!this.failing) this.logger.warn({ err }, 'notifier could not poll; retrying');
      this.failing = true;
      return;
    }
    const seen = this.seen;
    this.seen = new Set(rows.map((row) => Number(row.seq)));
    if (seen !== null) {
      for (const row of rows) if (!seen.has(Number(row.seq))) this.listeners.deliver(row.channel, row.payload);
    }
    if (this.failing) {
      this.failing = false;
      this.logger.info('notifier polling again; rescanning');
      this.listeners.resumed();
    }
  }

  async notify(channel: string, payload = ''): Promise<void> {
    await this.insert(this.db, channel, payload);
  }

  async notifyIn(tx: Tx, channel: string, payload = ''): Promise<void> {
    const trx = openTransaction(tx);
    await this.insert(trx ?? this.db, channel, payload);
  }

  private async insert(db: Db, channel: string, payload: string): Promise<void> {
    await db.insertInto('cluster_notices').values({ channel, payload, created_at: NOW_MS }).execute();
  }

  listen(channel: string, handler: (payload: string) => void): () => void {
    return this.listeners.listen(channel, handler);
  }

  onResume(handler: () => void): () => void {
    return this.listeners.onResume(handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.polling;
    await this.listeners.close();
  }
}
