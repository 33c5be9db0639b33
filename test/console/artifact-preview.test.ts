import { describe, expect, it } from 'vitest';
import { IMAGE_PREVIEW_LIMIT, mediaType, parseJson, previewOf, TEXT_PREVIEW_LIMIT } from '../../console/src/artifacts/artifact-preview.js';
import { formatBytes, parseJsonFilter } from '../../console/src/format.js';

describe('artifact previews in the console', () => {
  it('previews JSON, text and images by their media type, whatever its case and parameters', () => {
    expect(mediaType('Text/Plain; charset=utf-8')).toBe('text/plain');
    expect(previewOf('application/json', 10)).toEqual({ kind: 'json' });
    expect(previewOf('application/vnd.api+json; charset=utf-8', 10)).toEqual({ kind: 'json' });
    expect(previewOf('text/markdown', 10)).toEqual({ kind: 'text' });
    expect(previewOf('application/xml', 10)).toEqual({ kind: 'text' });
    expect(previewOf('application/atom+xml', 10)).toEqual({ kind: 'text' });
    expect(previewOf('image/png', 10)).toEqual({ kind: 'image', redraw: false });
    // +xml, but an image: redrawn as a PNG, so that no address of it is an SVG document on the console's origin.
    expect(previewOf('image/svg+xml', 10)).toEqual({ kind: 'image', redraw: true });
    expect(previewOf('Image/SVG+XML; charset=utf-8', 10)).toEqual({ kind: 'image', redraw: true });
    // An image type the console does not know as passive is redrawn too.
    expect(previewOf('image/x-unknown', 10)).toEqual({ kind: 'image', redraw: true });
    expect(previewOf('image/webp', 10)).toEqual({ kind: 'image', redraw: false });
    expect(previewOf('application/octet-stream', 10)).toEqual({ kind: 'none' });
    expect(previewOf('application/pdf', 10)).toEqual({ kind: 'none' });
  });

  it('previews only up to a size limit, which it names', () => {
    expect(previewOf('text/plain', TEXT_PREVIEW_LIMIT)).toEqual({ kind: 'text' });
    expect(previewOf('text/plain', TEXT_PREVIEW_LIMIT + 1)).toEqual({ kind: 'too-large', limit: TEXT_PREVIEW_LIMIT });
    expect(previewOf('application/json', TEXT_PREVIEW_LIMIT + 1)).toEqual({ kind: 'too-large', limit: TEXT_PREVIEW_LIMIT });
    expect(previewOf('image/jpeg', TEXT_PREVIEW_LIMIT + 1)).toEqual({ kind: 'image', redraw: false });
    expect(previewOf('image/jpeg', IMAGE_PREVIEW_LIMIT + 1)).toEqual({ kind: 'too-large', limit: IMAGE_PREVIEW_LIMIT });
  });

  it('parses JSON text, and says when it is not JSON', () => {
    expect(parseJson('{"a":[1,2]}')).toEqual({ value: { a: [1, 2] } });
    expect(parseJson('null')).toEqual({ value: null });
    expect(parseJson('{"a":')).toBeNull();
  });

  it('reads a metadata filter from the URL as JSON text, whether the router parsed it or not', () => {
    expect(parseJsonFilter({ project: 'alpha' })).toBe('{"project":"alpha"}');
    expect(parseJsonFilter(' {"project":"alpha"} ')).toBe('{"project":"alpha"}');
    expect(parseJsonFilter('')).toBeUndefined();
    expect(parseJsonFilter(null)).toBeUndefined();
  });

  it('shows sizes in binary units', () => {
    expect(formatBytes(0)).toBe('0 bytes');
    expect(formatBytes(1)).toBe('1 byte');
    expect(formatBytes(1023)).toBe('1023 bytes');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(20 * 1024 * 1024)).toBe('20 MiB');
    expect(formatBytes(5 * 1024 ** 4)).toBe('5 TiB');
  });
});
