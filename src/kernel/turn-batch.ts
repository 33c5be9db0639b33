/**
 * Calls that arrive in one turn of the event loop, run together as one batch when the turn
 * ends (a setImmediate): group commit done where the statement is known, so N sends become one
 * multi-row INSERT and N acknowledgements one transaction. The fate of each call stays its own:
 * when the batch fails, every call of it runs again alone, so only a call that fails on its own
 * fails (and a batch's work must be all or nothing, so a retried call never finds half of it done).
 * An idle server runs each call alone, at most the rest of its turn later.
 */
export class TurnBatch<I, O> {
  private pending: Array<{ item: I; resolve: (out: O) => void; reject: (err: unknown) => void }> = [];

  /** `run` answers each item in order, and does the work of all of them or of none. */
  constructor(
    private readonly run: (items: readonly I[]) => Promise<O[]>,
    private readonly maxItems: number,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      if (this.pending.length === 0) setImmediate(() => void this.flush());
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.maxItems) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const calls = this.pending;
    if (calls.length === 0) return;
    this.pending = [];
    if (calls.length > 1) {
      try {
        const outs = await this.run(calls.map((call) => call.item));
        calls.forEach((call, i) => call.resolve(outs[i]!));
        return;
      } catch {
        // Which call failed is not known: each is asked again on its own, and fails or not alone.
      }
    }
    await Promise.all(
      calls.map((call) =>
        this.run([call.item]).then(
          (outs) => call.resolve(outs[0]!),
          (err: unknown) => call.reject(err),
        ),
      ),
    );
  }
}
