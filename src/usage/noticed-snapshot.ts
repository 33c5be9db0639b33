import type { Notifier } from '../kernel/notifier.js';
import type { Tx } from '../kernel/tx.js';

/** A value as last read, and the notifier epoch and data version it was read under. */
interface Held<T> {
  value: T;
  epoch: number | null;
  dataVersion: number;
}

/**
 * What the database says of something that rarely changes and is asked often, kept in memory. It
 * holds until a change is told on `channel` (here or on another node), notices may have been lost
 * (another notifier epoch) or another process wrote the SQLite file (its data version moved).
 */
export class NoticedSnapshot<T> {
  private held: Held<T> | null = null;
  /** Changes heard of: a read that one overtook is not kept. */
  private changes = 0;

  constructor(
    private readonly notifier: Notifier,
    private readonly channel: string,
    private readonly dataVersion: (() => number) | null,
  ) {
    notifier.listen(channel, () => this.forget());
  }

  /** The value held while it holds (else null): for readers inside a transaction, which may not keep what they read. */
  peek(): T | null {
    const held = this.held;
    return held && held.epoch === this.notifier.epoch && held.dataVersion === (this.dataVersion?.() ?? 0) ? held.value : null;
  }

  /** The value held, or `load`'s (kept unless a change was heard of during the load). */
  async read(load: () => Promise<T>): Promise<T> {
    const held = this.peek();
    if (held !== null) return held;
    // Stamped before the read: a change told in between only costs another read.
    const epoch = this.notifier.epoch;
    const dataVersion = this.dataVersion?.() ?? 0;
    const changes = this.changes;
    const value = await load();
    // Kept only where notices can arrive.
    if (epoch !== null && changes === this.changes) this.held = { value, epoch, dataVersion };
    return value;
  }

  /** Tells every node, as part of `tx`, that the value changed (and forgets it here now). */
  async changedIn(tx: Tx): Promise<void> {
    this.forget();
    await this.notifier.notifyIn(tx, this.channel);
  }

  forget(): void {
    this.changes += 1;
    this.held = null;
  }
}
