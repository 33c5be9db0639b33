/*
 * Pure helpers of the console's views (no DOM, no React), unit-tested in test/console/format.test.ts.
 */

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
  ['second', 1],
];

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto', style: 'narrow' });

/** "5 min. ago", "in 2 hr.", "now": an ISO timestamp against `now` (ms), in its largest whole unit. */
export function relativeTime(iso: string | null, now: number): string {
  if (iso === null) return 'never';
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === 'second') return relative.format(Math.trunc(seconds / size), unit);
  }
  return iso;
}

/** A load of 0..1 as a percentage; unknown when the agent has not reported one. */
export function formatLoad(load: number | null): string {
  return load === null ? '—' : `${Math.round(load * 100)} %`;
}

/** A 1-based page number from the URL: anything but a positive integer is the first page. */
export function parsePage(value: unknown): number {
  const page = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  return Number.isInteger(page) && page >= 1 ? page : 1;
}

/** A filter text from the URL: trimmed, and absent when empty (so it leaves the URL). */
export function parseFilter(value: unknown): string | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const text = String(value).trim();
  return text === '' ? undefined : text;
}

/**
 * A JSON filter from the URL, as text: the router reads `{"a":1}` typed into the address bar as
 * an object (it parses search values as JSON), and its own links as a string.
 */
export function parseJsonFilter(value: unknown): string | undefined {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : parseFilter(value);
}

export interface PageWindow {
  /** The `offset` to ask the server for. */
  offset: number;
  /** 1-based positions of the first and last item shown (0 and 0 when there are none). */
  first: number;
  last: number;
  pages: number;
  previous: number | null;
  next: number | null;
}

/** Where page `page` of `pageSize` items sits in a list of `total` (a page past the end shows the last one). */
export function pageWindow(page: number, pageSize: number, total: number): PageWindow {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const current = Math.min(Math.max(1, page), pages);
  const offset = (current - 1) * pageSize;
  return {
    offset,
    first: total === 0 ? 0 : offset + 1,
    last: Math.min(offset + pageSize, total),
    pages,
    previous: current > 1 ? current - 1 : null,
    next: current < pages ? current + 1 : null,
  };
}

/** A duration in its two largest units: "850 ms", "12.3 s", "4 min 05 s", "2 h 03 min". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.floor(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${pad(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${pad(Math.floor((seconds % 3600) / 60))} min`;
}

/** How long something took from `start` to `end` (ISO), or has taken until `now` (ms) when not finished; null before it starts. */
export function elapsed(start: string | null, end: string | null, now: number): number | null {
  if (start === null) return null;
  return (end === null ? now : Date.parse(end)) - Date.parse(start);
}

const BYTE_UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];

/** A size for people: "512 bytes", "1.5 KiB", "20 MiB" (binary units, one decimal under 10). */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`;
  return `${value < 10 ? Math.round(value * 10) / 10 : Math.round(value)} ${BYTE_UNITS[unit]}`;
}

/** A copy of a set with `item` added (`on`) or removed: the next state of a set of ticked boxes. */
export function withMember<T>(set: ReadonlySet<T>, item: T, on: boolean): ReadonlySet<T> {
  const next = new Set(set);
  if (on) next.add(item);
  else next.delete(item);
  return next;
}
