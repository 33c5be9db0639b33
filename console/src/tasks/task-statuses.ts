/*
 * The statuses of the Tasks board: pure helpers (no DOM, no React), unit-tested in
 * test/console/task-statuses.test.ts.
 */
import type { BUILT_IN_STATUSES } from '../../../src/tasks/schemas.js';

// The board's first columns: the server's built-in statuses, in their order (checked against the schema).
export const BOARD_STATUSES = ['todo', 'in_progress', 'done'] as const satisfies typeof BUILT_IN_STATUSES;
/** A status slug, as the tasks schema's `Status` pattern. */
export const STATUS_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;

/** A status as a heading: `in_progress` → "In progress". */
export function statusLabel(status: string): string {
  const words = status.replace(/[_-]+/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Statuses from the URL (`?statuses=review,qa`): valid slugs not built in, each once. */
export function parseStatuses(value: unknown): string[] | undefined {
  const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : [];
  const builtIn: readonly string[] = BOARD_STATUSES;
  const statuses = [...new Set(items.map((item) => String(item).trim()))].filter((s) => STATUS_PATTERN.test(s) && !builtIn.includes(s));
  return statuses.length > 0 ? statuses : undefined;
}
