import { InvalidRequest } from './errors.js';

/** Small helpers for the JSON documents the stores keep as text (see db/capabilities.ts). */

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A nullable JSON text column, parsed. */
export function parseNullableJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

const NUL_MESSAGE = 'must not contain the NUL character (\\u0000)';

/** The path to the first string or key in `value` that holds a NUL, if any ([] for `value` itself). */
function nulPath(value: unknown): string[] | undefined {
  if (typeof value === 'string') return value.includes('\0') ? [] : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (key.includes('\0')) return [key];
    const found = nulPath(item);
    if (found) return [key, ...found];
  }
  return undefined;
}

/**
 * Refuses text holding a NUL, in a string or a key at any depth: PostgreSQL stores none in
 * `text` or `jsonb` (a 500 on 74 operations), and SQLite would keep what PostgreSQL cannot.
 * `field` names `value` in the error (none for a whole request part); `location` is where it
 * was sent (body, querystring, params).
 */
export function refuseNul(value: unknown, field: string | undefined, location?: string): void {
  const path = nulPath(value);
  if (!path) return;
  const named = [...(field === undefined ? [] : [field]), ...path].join('.').replaceAll('\0', '\\u0000') || location || 'value';
  throw new InvalidRequest(`Invalid request: ${named} ${NUL_MESSAGE}`, [{ field: named, ...(location && { in: location }), message: NUL_MESSAGE }]);
}
