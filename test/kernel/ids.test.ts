import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newId, newSecret } from '../../src/kernel/ids.js';

const millisecondOf = (id: string) =>
  [...id.slice(id.indexOf('_') + 1).slice(0, 10)].reduce((value, char) => value * 32 + '0123456789abcdefghjkmnpqrstvwxyz'.indexOf(char), 0);

describe('ids', () => {
  it('are prefixed, unique and sort in creation order, also within one millisecond', () => {
    const ids = Array.from({ length: 2000 }, () => newId('msg'));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-z]{26}$/);
  });

  it('sort by their timestamps for any sequence of increasing times', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 2, maxLength: 50 }), (steps) => {
        let t = Date.parse('2030-01-01T00:00:00Z');
        const ids = steps.map((step) => newId('tsk', (t += step)));
        expect([...ids].sort()).toEqual(ids);
      }),
    );
  });

  it('carry their millisecond in the first 10 characters, as base32', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.parse('2031-01-01T00:00:00Z'), max: 2 ** 48 }), (ms) => {
        // An earlier call may have used a later millisecond: ids never go back in time.
        expect(millisecondOf(newId('evt', ms))).toBeGreaterThanOrEqual(ms);
      }),
    );
    const ms = 2 ** 49 + 12_345;
    expect(millisecondOf(newId('evt', ms))).toBe(ms);
  });

  it('makes 32-byte url-safe secrets', () => {
    const secret = newSecret('sk_');
    expect(secret).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(newSecret()).not.toBe(newSecret());
  });
});
