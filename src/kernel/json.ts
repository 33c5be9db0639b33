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

const UNSTORABLE_MESSAGE = 'must not contain the NUL character (\\u0000) or an unpaired surrogate (\\ud800-\\udfff)';
/** A lone surrogate: with the u flag, a pair is one code point and does not match. */
const LONE_SURROGATE = /\p{Cs}/u;

function unstorable(text: string): boolean {
  return text.includes('\0') || LONE_SURROGATE.test(text);
}

/**
 * Whether raw JSON text may hold unstorable text, worth the walk of `refuseUnstorable`: it has
 * the escape of a NUL or one starting like a surrogate's (`\ud…`; some are other characters,
 * which costs only the walk). Native substring searches: no copy of the body.
 */
/** `json`: a string or a Buffer (this module is the console's too, which has no Node types). */
export function mayHoldUnstorable(json: { includes(search: string): boolean }): boolean {
  return json.includes('\\u0000') || json.includes('\\ud') || json.includes('\\uD');
}

/** The path to the first string or key in `value` that is unstorable, if any ([] for `value` itself). */
function unstorablePath(value: unknown): string[] | undefined {
  if (typeof value === 'string') return unstorable(value) ? [] : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (unstorable(key)) return [key];
    const found = unstorablePath(item);
    if (found) return [key, ...found];
  }
  return undefined;
}

/**
 * Refuses text PostgreSQL cannot hold, in a string or a key at any depth: a NUL (`text` and
 * `jsonb` store none: a 500 on 74 operations) or an unpaired surrogate (`jsonb` refuses its
 * escape, so one kept in JSON text failed every later cast of that text, and `text` would keep
 * U+FFFD in its place); SQLite would keep what PostgreSQL cannot. `field` names `value` in the
 * error (none for a whole request part); `location` is where it was sent (body, querystring, params).
 */
export function refuseUnstorable(value: unknown, field: string | undefined, location?: string): void {
  const path = unstorablePath(value);
  if (!path) return;
  // Named as JSON would escape them, so the message itself is storable text.
  const named =
    [...(field === undefined ? [] : [field]), ...path].map((part) => JSON.stringify(part).slice(1, -1)).join('.') || location || 'value';
  throw new InvalidRequest(`Invalid request: ${named} ${UNSTORABLE_MESSAGE}`, [
    { field: named, ...(location && { in: location }), message: UNSTORABLE_MESSAGE },
  ]);
}
