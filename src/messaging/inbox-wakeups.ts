import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Tx } from '../kernel/tx.js';
import type { Notifier } from '../kernel/notifier.js';

/** One notifier channel for every inbox; the payload names the inboxes. */
const CHANNEL = 'messaging:inboxes';
// NOTIFY payloads are capped at 8000 bytes; leave room for the notifier's own envelope.
const MAX_PAYLOAD = 6000;

/** A long poll waiting on an inbox. */
export interface Waiter {
  readonly inbox: string;
  /** A wake-up reached this waiter and no claim has consumed it yet. */
  notified: boolean;
  /** Ends the current sleep (null while the waiter is not sleeping). */
  wake: (() => void) | null;
}

/** The long polls of one inbox; `unnotified` in the order they may take the next wake-up. */
interface InboxWaiters {
  count: number;
  readonly unnotified: Set<Waiter>;
}

/** Long-poll claims let through per turn of the event loop (see `claimTurn`). */
const CLAIMS_PER_TURN = 32;

/**
 * Wakes long polls when their inbox gets messages; a wake-up is only a latency hint (receivers
 * claim from the database and time out on their own).
 *
 * - Waiters of this process are woken directly, right after the commit, with no database round
 *   trip (a send used to wake its own node's receivers through a NOTIFY inside its transaction).
 * - Other nodes learn through one notifier channel. Those NOTIFYs are coalesced: at most one is
 *   in flight per node, carrying every inbox touched meanwhile. PostgreSQL serializes the
 *   commits of transactions that NOTIFY, so one per send capped the send rate.
 * - One waiter per inbox is woken, not all of them: it passes the wake-up on when it leaves
 *   without claiming, or with a full batch (more may be waiting). Ten receivers on one inbox
 *   no longer make ten claims for one message.
 * - Registering, leaving and waking cost the same with 2,000 waiters on an inbox as with one
 *   (no walk over the waiters), and long polls take turns to claim (`claimTurn`).
 */
export class InboxWakeups {
  private readonly waiters = new Map<string, InboxWaiters>();
  private readonly node = randomUUID();
  private readonly outgoing = new Set<string>();
  private flushing = false;
  private claimsThisTurn = 0;
  private turnScheduled = false;
  /** Claims waiting for a later turn, oldest first from `nextQueued`. */
  private queuedClaims: (() => void)[] = [];
  private nextQueued = 0;

  // The listener lives as long as the notifier: closing the notifier at shutdown removes it.
  constructor(
    private readonly notifier: Notifier,
    private readonly logger: Logger,
  ) {
    notifier.listen(CHANNEL, (payload) => this.received(payload));
    // Sends on other nodes while notifications were lost: every inbox with a waiter looks once.
    notifier.onResume(() => {
      for (const inbox of [...this.waiters.keys()]) this.wakeOne(inbox);
    });
  }

  register(inbox: string): Waiter {
    const waiter: Waiter = { inbox, notified: false, wake: null };
    let entry = this.waiters.get(inbox);
    if (!entry) this.waiters.set(inbox, (entry = { count: 0, unnotified: new Set() }));
    entry.count++;
    entry.unnotified.add(waiter);
    return waiter;
  }

  /** The waiter is about to claim: the claim consumes its wake-up, and it may take the next one. */
  rearm(waiter: Waiter): void {
    if (!waiter.notified) return;
    waiter.notified = false;
    this.waiters.get(waiter.inbox)?.unnotified.add(waiter);
  }

  /** A waiter that stays claimed a full batch: the inbox may hold more, so another waiter looks too. */
  passOn(waiter: Waiter): void {
    this.wakeOne(waiter.inbox);
  }

  /** Removes a waiter; `more` says its last claim was full, so the inbox may hold more. */
  unregister(waiter: Waiter, more: boolean): void {
    const entry = this.waiters.get(waiter.inbox);
    if (!entry) return;
    entry.unnotified.delete(waiter);
    if (--entry.count === 0) this.waiters.delete(waiter.inbox);
    else if (waiter.notified || more) this.wakeOne(waiter.inbox);
  }

  /**
   * Resolves when a long poll may claim, or returns undefined when it may at once: at most
   * CLAIMS_PER_TURN claims start in one turn of the event loop, the rest in later turns in the
   * order they asked. 2,000 polls opened (or timing out) together otherwise ran 2,000 claims,
   * and on SQLite their continuations after one group commit, in one stretch that stopped
   * every other request for a second or more.
   */
  claimTurn(): Promise<void> | undefined {
    if (this.claimsThisTurn < CLAIMS_PER_TURN && this.nextQueued === this.queuedClaims.length) {
      this.claimsThisTurn++;
      this.scheduleTurn();
      return undefined;
    }
    this.scheduleTurn();
    return new Promise((resolve) => this.queuedClaims.push(resolve));
  }

  private scheduleTurn(): void {
    if (this.turnScheduled) return;
    this.turnScheduled = true;
    setImmediate(() => this.nextTurn());
  }

  private nextTurn(): void {
    this.turnScheduled = false;
    this.claimsThisTurn = 0;
    while (this.claimsThisTurn < CLAIMS_PER_TURN && this.nextQueued < this.queuedClaims.length) {
      this.claimsThisTurn++;
      this.queuedClaims[this.nextQueued++]!();
    }
    if (this.nextQueued === this.queuedClaims.length) {
      this.queuedClaims = [];
      this.nextQueued = 0;
    }
    if (this.claimsThisTurn > 0) this.scheduleTurn();
  }

  /** The inboxes got messages in a transaction that has committed. */
  committed(inboxes: Iterable<string>): void {
    // Only other nodes need the notification: with one process (SQLite) it would only come back.
    const tellOthers = this.notifier.spansNodes;
    for (const inbox of new Set(inboxes)) {
      this.wakeOne(inbox);
      if (tellOthers) this.outgoing.add(inbox);
    }
    if (!this.flushing && this.outgoing.size > 0) void this.flush();
  }

  /** Every inbox may have messages to deliver now (a pause of every agent ended). */
  committedAll(): void {
    for (const inbox of [...this.waiters.keys()]) this.wakeOne(inbox);
    if (this.notifier.spansNodes)
      void this.notifier.notify(CHANNEL, JSON.stringify({ n: this.node, i: [], a: 1 })).catch((err: unknown) => {
        this.logger.warn({ err }, 'could not notify other nodes of inboxes to look at');
      });
  }

  /**
   * The inboxes get messages in `tx`, a caller's transaction whose commit we do not see:
   * the notifier delivers at commit (PostgreSQL) to every node, this one included.
   */
  async inTransaction(tx: Tx, inboxes: Iterable<string>): Promise<void> {
    for (const payload of this.payloads([...new Set(inboxes)], '')) await this.notifier.notifyIn(tx, CHANNEL, payload);
  }

  private wakeOne(inbox: string): void {
    const unnotified = this.waiters.get(inbox)?.unnotified;
    const waiter = unnotified?.values().next().value;
    if (!waiter) return;
    unnotified!.delete(waiter);
    waiter.notified = true;
    waiter.wake?.();
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.outgoing.size > 0) {
        const inboxes = [...this.outgoing];
        this.outgoing.clear();
        for (const payload of this.payloads(inboxes, this.node)) await this.notifier.notify(CHANNEL, payload);
      }
    } catch (err) {
      // Lost wake-ups cost remote receivers latency, not messages.
      this.logger.warn({ err }, 'could not notify other nodes of new messages');
    } finally {
      this.flushing = false;
    }
  }

  /** JSON payloads `{n: node, i: inboxes}` under the size cap. */
  private *payloads(inboxes: string[], node: string): Generator<string> {
    let batch: string[] = [];
    let size = 0;
    for (const inbox of inboxes) {
      // Bytes, with room for the quoting the notifier's envelope adds around each name.
      const bytes = Buffer.byteLength(inbox) + 6;
      if (batch.length > 0 && size + bytes > MAX_PAYLOAD) {
        yield JSON.stringify({ n: node, i: batch });
        batch = [];
        size = 0;
      }
      batch.push(inbox);
      size += bytes;
    }
    if (batch.length > 0) yield JSON.stringify({ n: node, i: batch });
  }

  private received(payload: string): void {
    let parsed: { n: string; i: string[]; a?: 1 };
    try {
      parsed = JSON.parse(payload) as { n: string; i: string[]; a?: 1 };
    } catch {
      return;
    }
    // This node's own notifications come back through LISTEN; its waiters were woken already.
    if (parsed.n === this.node) return;
    for (const inbox of parsed.a ? [...this.waiters.keys()] : parsed.i) this.wakeOne(inbox);
  }
}
