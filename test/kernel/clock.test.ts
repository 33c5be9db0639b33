import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { iso } from '../../src/kernel/clock.js';

describe('iso', () => {
  it('writes what Date#toISOString writes, for any millisecond of years 0000–9999 and beyond', () => {
    fc.assert(
      fc.property(fc.integer({ min: -62_167_219_200_000 - 10 * 86_400_000, max: 253_402_300_799_999 + 10 * 86_400_000 }), (ms) => {
        expect(iso(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 20_000 },
    );
  });

  it('gets the edges right: epoch, leap days, century years, the first and last representable days', () => {
    for (const text of [
      '1970-01-01T00:00:00.000Z',
      '1969-12-31T23:59:59.999Z',
      '2000-02-29T12:34:56.007Z',
      '1900-03-01T00:00:00.010Z',
      '2100-02-28T23:59:59.100Z',
      '2024-12-31T23:59:59.999Z',
      '0000-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
    ]) {
      expect(iso(Date.parse(text))).toBe(text);
    }
  });

  it('passes null and undefined through as null', () => {
    expect(iso(null)).toBeNull();
    expect(iso(undefined)).toBeNull();
  });
});
