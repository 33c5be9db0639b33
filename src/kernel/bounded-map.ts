/**
 * A map that keeps at most `capacity` entries and drops the one set longest ago first (setting
 * a key again renews it): the in-memory caches of things that never change once made — parsed
 * plans and schedules, compiled validators and statements — or that are checked before use.
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, value);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  /** The value kept for `key`, made and kept on a miss. */
  getOrCreate(key: K, make: () => V): V {
    const known = this.entries.get(key);
    if (known !== undefined || this.entries.has(key)) return known as V;
    const value = make();
    this.set(key, value);
    return value;
  }
}
