import { describe, expect, it } from 'vitest';
import { formatInZone, previewCron } from '../../console/src/routines/cron-preview.js';

describe("the routine form's cron preview", () => {
  const from = new Date('2030-01-01T00:00:00Z');

  it('lists the next fires in the routine’s time zone', () => {
    const preview = previewCron('0 9 * * 1-5', 'Europe/Paris', 5, from);
    expect('fires' in preview && preview.fires.map((d) => d.toISOString())).toEqual([
      '2030-01-01T08:00:00.000Z',
      '2030-01-02T08:00:00.000Z',
      '2030-01-03T08:00:00.000Z',
      '2030-01-04T08:00:00.000Z',
      '2030-01-07T08:00:00.000Z',
    ]);
    expect(formatInZone(new Date('2030-01-07T08:00:00.000Z'), 'Europe/Paris')).toBe('Mon, Jan 7, 2030, 09:00 GMT+1');
    expect('fires' in previewCron('@hourly', '', 2, from)).toBe(true);
  });

  it('says what is wrong with an expression or a zone', () => {
    expect(previewCron('61 * * * *', 'UTC', 5, from)).toEqual({ problem: 'Invalid value for minute: 61' });
    expect(previewCron('  ', 'UTC', 5, from)).toEqual({ problem: 'Enter a cron expression.' });
    expect(previewCron('0 0 * * *', 'Mars/Base', 5, from)).toMatchObject({ problem: expect.stringContaining('Mars/Base') });
  });
});
