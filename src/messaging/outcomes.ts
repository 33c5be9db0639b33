import type { Tx } from '../kernel/tx.js';
import type { MessageOrigin, MessageOutcome, OriginKind, OutcomeHandler, OutcomeHandlers } from '../kernel/ports.js';
import type { MessageRow } from './store.js';

/** What became of a message, as its producer hears it. */
type Outcome = Omit<MessageOutcome, 'message_id' | 'origin' | 'destination'>;

/**
 * Tells each message's producer (its origin) what became of it, through the handler of its
 * origin kind, inside the transaction that leased or settled it.
 */
export class OutcomeDispatch {
  /** By origin kind (`messages.origin_kind`), from `routeTo`. */
  private handlers = new Map<string, OutcomeHandler>();

  routeTo(handlers: OutcomeHandlers): void {
    this.handlers = new Map(Object.entries(handlers));
  }

  /** Whether the producer of `row` (if any) wants to hear of outcomes like `status`. */
  hears(row: MessageRow, status: MessageOutcome['status']): row is MessageRow & { origin_kind: OriginKind; origin_ref: string } {
    if (row.origin_kind === null || row.origin_ref === null) return false;
    const handler = this.handlers.get(row.origin_kind);
    return handler !== undefined && (status !== 'delivered' || handler.delivered);
  }

  /** Tells the producer of a dead letter that listens for redrives that it became `copyId`; true when one listens. */
  async redriven(tx: Tx, dead: MessageRow, copyId: string, actor: string): Promise<boolean> {
    const origin = this.keptOrigin(dead);
    if (!origin) return false;
    await this.handlers.get(origin.kind)!.redriven!(tx, { message_id: dead.id, origin, redriven_as: copyId, actor });
    return true;
  }

  /** The origin a redriven copy of `row` keeps: its producer's, when that listens for redrives. */
  keptOrigin(row: MessageRow): MessageOrigin | undefined {
    if (row.origin_kind === null || row.origin_ref === null || !this.handlers.get(row.origin_kind)?.redriven) return undefined;
    return { kind: row.origin_kind as OriginKind, ref: row.origin_ref };
  }

  /** One call per origin kind; `outcome` is every row's, or each row's own. */
  async emit(tx: Tx, rows: readonly MessageRow[], outcome: Outcome | ((row: MessageRow) => Outcome)): Promise<void> {
    const byKind = new Map<OriginKind, MessageOutcome[]>();
    for (const row of rows) {
      const its = typeof outcome === 'function' ? outcome(row) : outcome;
      if (!this.hears(row, its.status)) continue;
      let batch = byKind.get(row.origin_kind);
      if (!batch) byKind.set(row.origin_kind, (batch = []));
      batch.push({ message_id: row.id, origin: { kind: row.origin_kind, ref: row.origin_ref }, destination: row.destination, ...its });
    }
    for (const [kind, outcomes] of byKind) {
      // Producers lock their own rows (a plan run) in the handler: a global order (by origin) keeps
      // two concurrent batches that touch the same runs from deadlocking on PostgreSQL.
      outcomes.sort((a, b) => (a.origin.ref < b.origin.ref ? -1 : a.origin.ref === b.origin.ref ? 0 : 1));
      await this.handlers.get(kind)!.handle(tx, outcomes);
    }
  }
}
