/*
 * Which artifacts the console previews, and how: pure rules (no DOM), unit-tested in
 * test/console/artifact-preview.test.ts.
 */

/** Text and JSON are read whole and laid out by the page: past this they are only downloaded. */
export const TEXT_PREVIEW_LIMIT = 1024 * 1024;
/** Images are decoded by the browser, cheaper per byte than laid-out text. */
export const IMAGE_PREVIEW_LIMIT = 5 * 1024 * 1024;

export type Preview =
  | { kind: 'json' | 'text' | 'image' }
  | { kind: 'too-large'; limit: number }
  | { kind: 'none' };

/** The media type without parameters, lowercased: 'Text/Plain; charset=utf-8' → 'text/plain'. */
export function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

const TEXT_TYPES = new Set(['application/xml', 'application/javascript', 'application/x-ndjson', 'application/yaml', 'application/x-yaml', 'application/toml', 'application/sql', 'application/csv']);

function kindOf(type: string): 'json' | 'text' | 'image' | null {
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  // Before text: SVG is +xml too, but an <img> shows it (and runs none of its scripts).
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('text/') || type.endsWith('+xml') || TEXT_TYPES.has(type)) return 'text';
  return null;
}

/** How a version of `size_bytes` of `contentType` is previewed: as JSON, text or an image, not at all, or not at this size. */
export function previewOf(contentType: string, sizeBytes: number): Preview {
  const kind = kindOf(mediaType(contentType));
  if (kind === null) return { kind: 'none' };
  const limit = kind === 'image' ? IMAGE_PREVIEW_LIMIT : TEXT_PREVIEW_LIMIT;
  return sizeBytes > limit ? { kind: 'too-large', limit } : { kind };
}

/** JSON text as a value for the viewer, or null when it does not parse (then it is shown as text). */
export function parseJson(text: string): { value: unknown } | null {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return null;
  }
}
