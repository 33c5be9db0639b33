/** Small helpers for the JSON documents the stores keep as text (see db/capabilities.ts). */

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A nullable JSON text column, parsed. */
export function parseNullableJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}
