import type { ByteRange } from './blob-store.js';

/** What a Range header asks of a representation of `size` bytes (RFC 9110 §14). */
export type RangeDecision = { kind: 'full' } | { kind: 'partial'; range: ByteRange } | { kind: 'unsatisfiable' };

const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/i;

/**
 * One byte range, or the whole representation when the header is absent, malformed, in
 * another unit or asks for several ranges (a server may ignore Range; multipart/byteranges
 * is not worth its complexity here). Numbers beyond 2^53 are treated as "past the end".
 */
export function decideRange(header: string | undefined, size: number): RangeDecision {
  if (header === undefined) return { kind: 'full' };
  const match = SINGLE_RANGE.exec(header.trim());
  if (!match) return { kind: 'full' };
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return { kind: 'full' };
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', range: { start: Math.max(0, size - suffix), end: size - 1 } };
  }
  const start = Number(first);
  const end = last === '' ? Number.POSITIVE_INFINITY : Number(last);
  // 'bytes=5-2' is invalid syntax, which is ignored, not refused.
  if (end < start) return { kind: 'full' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', range: { start, end: Math.min(end, size - 1) } };
}

/** The opaque tags of an If-Match / If-None-Match list, unquoted, weakness ignored; '*' kept. */
export function entityTags(header: string): string[] {
  return header
    .split(',')
    .map((tag) =>
      tag
        .trim()
        .replace(/^W\//, '')
        .replace(/^"(.*)"$/, '$1'),
    )
    .filter((tag) => tag !== '');
}

/** True when the header names this sha256 (or '*'). */
export function tagMatches(header: string | undefined, sha256: string): boolean {
  if (header === undefined) return false;
  return entityTags(header).some((tag) => tag === '*' || tag.toLowerCase() === sha256);
}

/** `attachment` with an ASCII fallback and the exact UTF-8 name (RFC 6266). */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
