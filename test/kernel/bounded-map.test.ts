import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../src/kernel/bounded-map.js';

describe('BoundedMap', () => {
  it('drops the oldest entry past its capacity and makes values once', () => {
    const map = new BoundedMap<string, number>(2);
    let made = 0;
    expect(map.getOrCreate('a', () => ++made)).toBe(1);
    expect(map.getOrCreate('a', () => ++made)).toBe(1);
    map.set('b', 2);
    map.set('c', 3);
    expect(map.get('a')).toBeUndefined();
    expect([map.get('b'), map.get('c'), map.size]).toEqual([2, 3, 2]);
    map.delete('b');
    expect(map.size).toBe(1);
  });

  it('never holds more than its capacity and keeps the newest entries (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(fc.integer({ min: 0, max: 50 })), (capacity, keys) => {
        const map = new BoundedMap<number, number>(capacity);
        for (const key of keys) map.set(key, key);
        expect(map.size).toBeLessThanOrEqual(capacity);
        if (keys.length > 0) expect(map.get(keys[keys.length - 1]!)).toBe(keys[keys.length - 1]);
      }),
    );
  });
});
