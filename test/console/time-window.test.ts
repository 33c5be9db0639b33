import { describe, expect, it } from 'vitest';
import { draftOf, fromLocalInput, parseTimeWindow, toLocalInput, windowBounds, windowOf } from '../../console/src/time-window.js';

describe('a list’s time filter', () => {
  const now = Date.parse('2030-01-02T12:00:00.000Z');

  it('reads a relative window or two times from the URL, the window winning, and drops malformed ones', () => {
    expect(parseTimeWindow({ within: '7d', from: '2030-01-01T00:00:00Z' })).toEqual({ within: '7d' });
    expect(parseTimeWindow({ within: '2y', from: 'yesterday', to: '2030-01-01T00:00:00Z' })).toEqual({
      within: undefined,
      from: undefined,
      to: '2030-01-01T00:00:00.000Z',
    });
    expect(parseTimeWindow({})).toEqual({ within: undefined, from: undefined, to: undefined });
  });

  it('asks the API for bounds, a relative window measured from now', () => {
    expect(windowBounds({ within: '1h' }, now)).toEqual({ after: '2030-01-02T11:00:00.000Z', before: undefined });
    expect(windowBounds({ from: '2030-01-01T00:00:00.000Z', to: '2030-01-02T00:00:00.000Z' }, now)).toEqual({
      after: '2030-01-01T00:00:00.000Z',
      before: '2030-01-02T00:00:00.000Z',
    });
    expect(windowBounds({}, now)).toEqual({ after: undefined, before: undefined });
  });

  it('goes through its fields and back unchanged', () => {
    for (const window of [
      { within: '24h' as const },
      { from: '2030-01-01T08:30:00.000Z', to: undefined },
      { from: undefined, to: '2030-01-02T00:00:00.000Z' },
      {},
    ]) {
      expect(windowOf(draftOf(window))).toEqual({ within: undefined, from: undefined, to: undefined, ...window });
    }
    expect(draftOf({})).toEqual({ choice: 'any', from: '', to: '' });
    // Times typed while "Between…" was chosen are dropped when another choice is applied.
    expect(windowOf({ choice: '30d', from: '2030-01-01T00:00', to: '' })).toEqual({ within: '30d', from: undefined, to: undefined });
  });

  it('round-trips a time through a datetime-local field', () => {
    const iso = '2030-01-02T08:30:00.000Z';
    expect(toLocalInput(iso)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d$/);
    expect(fromLocalInput(toLocalInput(iso))).toBe(iso);
    expect(toLocalInput(undefined)).toBe('');
    expect(fromLocalInput('')).toBeUndefined();
  });
});
