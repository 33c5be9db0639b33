/*
 * Which artifacts the console previews, and how: pure rules (no DOM), unit-tested in
 * test/console/artifact-preview.test.ts.
 */

/** Text and JSON are read whole and laid out by the page: past this they are only downloaded. */
export const TEXT_PREVIEW_LIMIT = 1024 * 1024;
/** Images are decoded by the browser, cheaper per byte than laid-out text. */
export const IMAGE_PREVIEW_LIMIT = 5 * 1024 * 1024;

export type Preview =
  | { kind: 'json' | 'text' }
  /** `redraw`: shown as a PNG drawn from it, never from an address of its own format (see PASSIVE_IMAGE_TYPES). */
  | { kind: 'image'; redraw: boolean }
  | { kind: 'too-large'; limit: number }
  | { kind: 'none' };

/** The media type without parameters, lowercased: 'Text/Plain; charset=utf-8' → 'text/plain'. */
export function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

const TEXT_TYPES = new Set([
  'application/xml',
  'application/javascript',
  'application/x-ndjson',
  'application/yaml',
  'application/x-yaml',
  'application/toml',
  'application/sql',
  'application/csv',
]);

/**
 * Image formats that carry no script, shown from an object URL of their own type. Any other image
 * (SVG above all) is drawn onto a canvas and shown as the PNG it makes: an <img> runs no script,
 * but its object URL, opened in a tab ("Open image in new tab"), would be a document on the
 * console's origin, whose script could read the stored key.
 */
const PASSIVE_IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/bmp']);

function kindOf(type: string): 'json' | 'text' | 'image' | null {
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  // Before text: SVG is +xml too, but is shown as an image (redrawn, with none of its scripts run).
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('text/') || type.endsWith('+xml') || TEXT_TYPES.has(type)) return 'text';
  return null;
}

/** How a version of `size_bytes` of `contentType` is previewed: as JSON, text or an image, not at all, or not at this size. */
export function previewOf(contentType: string, sizeBytes: number): Preview {
  const kind = kindOf(mediaType(contentType));
  if (kind === null) return { kind: 'none' };
  const limit = kind === 'image' ? IMAGE_PREVIEW_LIMIT : TEXT_PREVIEW_LIMIT;
  if (sizeBytes > limit) return { kind: 'too-large', limit };
  return kind === 'image' ? { kind, redraw: !PASSIVE_IMAGE_TYPES.has(mediaType(contentType)) } : { kind };
}

/** JSON text as a value for the viewer, or null when it does not parse (then it is shown as text). */
export function parseJson(text: string): { value: unknown } | null {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return null;
  }
}
