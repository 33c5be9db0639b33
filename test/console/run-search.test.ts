import { describe, expect, it } from 'vitest';
import { elapsed, formatDuration } from '../../console/src/format.js';
import { parseRunsSearch, replayFilter, runsQuery } from '../../console/src/runs/run-search.js';

describe('the runs list filters in the URL', () => {
  const now = Date.parse('2030-01-02T12:00:00.000Z');

  it('keeps known values and drops malformed ones', () => {
    expect(
      parseRunsSearch({ page: '2', plan: ' nightly ', status: 'failed', tag: ' env=prod ', metadata: ' customer =a=b', within: '24h' }),
    ).toEqual({
      page: 2,
      plan: 'nightly',
      status: 'failed',
      tag: 'env=prod',
      metadata: 'customer=a=b',
      within: '24h',
    });
    for (const malformed of ['customer', '=acme', 'has space=v', '-x=v'])
      expect(parseRunsSearch({ metadata: malformed }).metadata, malformed).toBeUndefined();
    expect(parseRunsSearch({ status: 'exploded', within: '2y', from: 'yesterday', to: '2030-01-01T00:00:00Z' })).toEqual({
      page: undefined,
      plan: undefined,
      status: undefined,
      within: undefined,
      from: undefined,
      to: '2030-01-01T00:00:00.000Z',
    });
  });

  it('a relative window wins over dates, and is measured from now', () => {
    const search = parseRunsSearch({ within: '1h', from: '2029-01-01T00:00:00Z' });
    expect(search.from).toBeUndefined();
    expect(runsQuery(search, now)).toEqual({
      plan_id: undefined,
      status: undefined,
      started_after: '2030-01-02T11:00:00.000Z',
      started_before: undefined,
    });
    expect(
      runsQuery(
        parseRunsSearch({
          plan: 'p',
          status: 'running',
          tag: 'x',
          metadata: 'k=v',
          from: '2030-01-01T00:00:00Z',
          to: '2030-01-02T00:00:00Z',
        }),
        now,
      ),
    ).toEqual({
      plan_id: 'p',
      status: 'running',
      tag: 'x',
      metadata: 'k=v',
      started_after: '2030-01-01T00:00:00.000Z',
      started_before: '2030-01-02T00:00:00.000Z',
    });
  });

  it('a replay takes the plan, a finished status and the window fixed at now; it has no tag or metadata filter', () => {
    expect(replayFilter(parseRunsSearch({ plan: 'p', status: 'failed', within: '1h' }), now)).toEqual({
      filter: { plan_id: 'p', status: 'failed', after: '2030-01-02T11:00:00.000Z', before: undefined },
    });
    expect(replayFilter(parseRunsSearch({ to: '2030-01-02T00:00:00Z' }), now)).toEqual({
      filter: { plan_id: undefined, status: undefined, after: undefined, before: '2030-01-02T00:00:00.000Z' },
    });
    expect(replayFilter(parseRunsSearch({ status: 'running' }), now)).toEqual({
      unavailable: 'Only finished runs are replayed, not running ones.',
    });
    for (const search of [{ tag: 'x' }, { metadata: 'k=v' }])
      expect(replayFilter(parseRunsSearch(search), now)).toMatchObject({ unavailable: expect.stringMatching(/tag and metadata/) });
  });
});

describe('durations', () => {
  it('in their two largest units', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(12_340)).toBe('12.3 s');
    expect(formatDuration(245_000)).toBe('4 min 05 s');
    expect(formatDuration(7_380_000)).toBe('2 h 03 min');
  });

  it('from start to end, or until now while running; none before the start', () => {
    expect(elapsed(null, null, 0)).toBeNull();
    expect(elapsed('2030-01-01T00:00:00.000Z', '2030-01-01T00:00:01.500Z', 0)).toBe(1500);
    expect(elapsed('2030-01-01T00:00:00.000Z', null, Date.parse('2030-01-01T00:00:02.000Z'))).toBe(2000);
  });
});
