import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentDisposition, decideRange, entityTags, tagMatches } from '../../src/artifacts/http-conditions.js';

describe('Range decisions', () => {
  it('handles the single-range forms of RFC 9110', () => {
    expect(decideRange(undefined, 10)).toEqual({ kind: 'full' });
    expect(decideRange('bytes=0-0', 10)).toEqual({ kind: 'partial', range: { start: 0, end: 0 } });
    expect(decideRange('bytes=3-', 10)).toEqual({ kind: 'partial', range: { start: 3, end: 9 } });
    expect(decideRange('bytes=-4', 10)).toEqual({ kind: 'partial', range: { start: 6, end: 9 } });
    expect(decideRange('bytes=-40', 10)).toEqual({ kind: 'partial', range: { start: 0, end: 9 } });
    expect(decideRange('BYTES=2-5', 10)).toEqual({ kind: 'partial', range: { start: 2, end: 5 } });
    expect(decideRange('bytes=10-', 10)).toEqual({ kind: 'unsatisfiable' });
    expect(decideRange('bytes=-0', 10)).toEqual({ kind: 'unsatisfiable' });
    expect(decideRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    for (const ignored of ['bytes=5-2', 'bytes=-', 'items=0-1', 'bytes=0-1,3-4', 'bytes=a-b', '']) {
      expect(decideRange(ignored, 10), ignored).toEqual({ kind: 'full' });
    }
  });

  it('never answers a range outside the content, and covers exactly what was asked where it exists', () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.nat(20_000), fc.option(fc.nat(20_000)), (size, a, b) => {
        const header = b === null ? `bytes=${a}-` : `bytes=${a}-${b}`;
        const decision = decideRange(header, size);
        if (b !== null && b < a) expect(decision).toEqual({ kind: 'full' });
        else if (a >= size) expect(decision).toEqual({ kind: 'unsatisfiable' });
        else expect(decision).toEqual({ kind: 'partial', range: { start: a, end: Math.min(b ?? size - 1, size - 1) } });
      }),
    );
    fc.assert(
      fc.property(fc.nat(10_000), fc.integer({ min: 1, max: 20_000 }), (size, suffix) => {
        const decision = decideRange(`bytes=-${suffix}`, size);
        if (size === 0) expect(decision.kind).toBe('unsatisfiable');
        else expect(decision).toEqual({ kind: 'partial', range: { start: size - Math.min(size, suffix), end: size - 1 } });
      }),
    );
  });
});

describe('entity tags', () => {
  const sha = 'ab'.repeat(32);
  it('matches quoted, unquoted, weak and listed tags, and *', () => {
    for (const header of [`"${sha}"`, sha, `W/"${sha}"`, `"x", "${sha}"`, '*', `"${sha.toUpperCase()}"`]) {
      expect(tagMatches(header, sha), header).toBe(true);
    }
    for (const header of [undefined, '"x"', `"${sha}0"`, '']) expect(tagMatches(header, sha), String(header)).toBe(false);
    expect(entityTags(' "a" , W/"b",c ')).toEqual(['a', 'b', 'c']);
  });
});

describe('Content-Disposition', () => {
  it('gives an ASCII fallback and the exact UTF-8 name', () => {
    expect(contentDisposition('a.txt')).toBe(`attachment; filename="a.txt"; filename*=UTF-8''a.txt`);
    expect(contentDisposition('naïve "q".txt')).toBe(`attachment; filename="na_ve _q_.txt"; filename*=UTF-8''na%C3%AFve%20%22q%22.txt`);
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 50 }), (name) => {
        const header = contentDisposition(name);
        const fallback = /filename="([^"]*)"/.exec(header)![1]!;
        expect(fallback).toMatch(/^[\x20-\x7e]*$/);
        expect(decodeURIComponent(/filename\*=UTF-8''(.*)$/.exec(header)![1]!)).toBe(name);
      }),
    );
  });
});
