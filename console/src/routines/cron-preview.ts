/*
 * The next fire times of a cron expression in a time zone, for the routine form's preview (the
 * same library the server schedules with, so the preview is what will happen). Pure: unit-tested
 * in test/console/cron-preview.test.ts.
 */
import { Cron } from 'croner';

export type CronPreview = { fires: Date[] } | { problem: string };

/** The next `count` fires after `from`, or what is wrong (the server's answer on save is the authority). */
export function previewCron(expression: string, timezone: string, count: number, from: Date): CronPreview {
  if (expression.trim() === '') return { problem: 'Enter a cron expression.' };
  try {
    const fires = new Cron(expression, { timezone: timezone.trim() || 'UTC', paused: true }).nextRuns(count, from);
    return fires.length === 0 ? { problem: 'This schedule never fires.' } : { fires };
  } catch (error) {
    return { problem: error instanceof Error ? error.message.replace(/^Cron\w*: /, '') : String(error) };
  }
}

/** A time as a clock in `timezone` shows it, with the zone's abbreviation ("Mon, Jan 7, 2030, 09:00 CET"). */
export function formatInZone(date: Date, timezone: string): string {
  return new Intl.DateTimeFormat('en', {
    timeZone: timezone,
    weekday: 'short',
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: date.getSeconds() === 0 ? undefined : '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).format(date);
}
