/** Time comes from here so tests can move it (house style: no hidden Date.now in services). */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Milliseconds since the epoch → the API's timestamp format (ISO 8601 UTC with ms). */
export function iso(ms: number): string;
export function iso(ms: number | null | undefined): string | null;
export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}
