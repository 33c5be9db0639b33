import { describe, expect, it } from 'vitest';
import { formatLoad, pageWindow, parseFilter, parsePage, relativeTime } from '../../console/src/format.js';

describe('console formatting and URL helpers', () => {
  const now = Date.parse('2030-01-01T12:00:00.000Z');

  it('says how long ago a timestamp was, in its largest whole unit', () => {
    expect(relativeTime(null, now)).toBe('never');
    expect(relativeTime('2030-01-01T12:00:00.000Z', now)).toBe('now');
    expect(relativeTime('2030-01-01T11:59:48.000Z', now)).toBe('12s ago');
    expect(relativeTime('2030-01-01T11:55:00.000Z', now)).toBe('5m ago');
    expect(relativeTime('2030-01-01T09:00:00.000Z', now)).toBe('3h ago');
    expect(relativeTime('2029-12-30T12:00:00.000Z', now)).toBe('2d ago');
    expect(relativeTime('2030-01-01T12:00:30.000Z', now)).toBe('in 30s');
  });

  it('shows a load as a percentage, and none as a dash', () => {
    expect(formatLoad(null)).toBe('—');
    expect(formatLoad(0)).toBe('0 %');
    expect(formatLoad(0.255)).toBe('26 %');
    expect(formatLoad(1)).toBe('100 %');
  });

  it('reads a page and filters from the URL, whatever was typed there', () => {
    expect(parsePage(3)).toBe(3);
    expect(parsePage('2')).toBe(2);
    for (const bad of [0, -1, 1.5, 'x', '', null, undefined, {}]) expect(parsePage(bad)).toBe(1);
    expect(parseFilter(' text.* ')).toBe('text.*');
    expect(parseFilter('')).toBeUndefined();
    expect(parseFilter('  ')).toBeUndefined();
    expect(parseFilter(42)).toBe('42');
    expect(parseFilter({})).toBeUndefined();
  });

  it('places a page in a list: offset, shown range, neighbours; past the end is the last page', () => {
    expect(pageWindow(1, 25, 0)).toEqual({ offset: 0, first: 0, last: 0, pages: 1, previous: null, next: null });
    expect(pageWindow(1, 25, 60)).toEqual({ offset: 0, first: 1, last: 25, pages: 3, previous: null, next: 2 });
    expect(pageWindow(2, 25, 60)).toEqual({ offset: 25, first: 26, last: 50, pages: 3, previous: 1, next: 3 });
    expect(pageWindow(3, 25, 60)).toEqual({ offset: 50, first: 51, last: 60, pages: 3, previous: 2, next: null });
    expect(pageWindow(9, 25, 60)).toEqual(pageWindow(3, 25, 60));
    expect(pageWindow(2, 25, 50)).toEqual({ offset: 25, first: 26, last: 50, pages: 2, previous: 1, next: null });
  });
});
