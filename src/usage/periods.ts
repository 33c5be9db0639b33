/**
 * A budget's periods in a time zone: the day, the ISO week (from Monday) or the month that holds
 * an instant, as UTC milliseconds; `total` is one period that never ends.
 */

export const PERIODS = ['day', 'week', 'month', 'total'] as const;
export type Period = (typeof PERIODS)[number];

/** The end of a `total` period (no budget period ends after it). */
export const NEVER = Number.MAX_SAFE_INTEGER;

const formats = new Map<string, Intl.DateTimeFormat>();

function formatOf(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(timeZone, format);
  }
  return format;
}

/** Whether the runtime knows the IANA zone. */
export function isTimeZone(timeZone: string): boolean {
  try {
    formatOf(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** How far the zone's wall clock is ahead of UTC at `ms`. */
function offsetAt(timeZone: string, ms: number): number {
  const parts = Object.fromEntries(
    formatOf(timeZone)
      .formatToParts(new Date(ms))
      .map((part) => [part.type, Number(part.value)]),
  );
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - (ms - (ms % 1000));
}

/** The UTC instant of a wall-clock time in the zone (the offset taken at that time). */
function instantOf(timeZone: string, wall: number): number {
  const guess = wall - offsetAt(timeZone, wall);
  return wall - offsetAt(timeZone, guess);
}

/** The period of `period` that holds `ms`: its start and end. */
export function periodAt(period: Period, timeZone: string, ms: number): { start: number; end: number } {
  if (period === 'total') return { start: 0, end: NEVER };
  const wall = new Date(ms + offsetAt(timeZone, ms));
  const [y, m, d] = [wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate()];
  if (period === 'day') return { start: instantOf(timeZone, Date.UTC(y, m, d)), end: instantOf(timeZone, Date.UTC(y, m, d + 1)) };
  if (period === 'week') {
    const monday = d - ((wall.getUTCDay() + 6) % 7);
    return { start: instantOf(timeZone, Date.UTC(y, m, monday)), end: instantOf(timeZone, Date.UTC(y, m, monday + 7)) };
  }
  return { start: instantOf(timeZone, Date.UTC(y, m, 1)), end: instantOf(timeZone, Date.UTC(y, m + 1, 1)) };
}
