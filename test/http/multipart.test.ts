import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PayloadTooLarge } from '../../src/kernel/errors.js';
import { parseFormWithBusboy, parseSmallForm, type FormLimits } from '../../src/http/multipart.js';

const LIMITS: FormLimits = { parts: 12, fields: 10, files: 1, fieldSize: 64 * 1024 };
const BOUNDARY = 'xYzZY';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

/** A form as undici (fetch's FormData) encodes it: the body and its Content-Type. */
async function encode(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  return { body: Buffer.from(await request.arrayBuffer()), contentType: request.headers.get('content-type')! };
}

/** Parts written by hand: `[headers, content]` each. */
function handmade(parts: [string, string | Buffer][], epilogue = '\r\n'): Buffer {
  const chunks: Buffer[] = [];
  for (const [headers, content] of parts)
    chunks.push(Buffer.from(`--${BOUNDARY}\r\n${headers}\r\n\r\n`), Buffer.from(content), Buffer.from('\r\n'));
  chunks.push(Buffer.from(`--${BOUNDARY}--${epilogue}`));
  return Buffer.concat(chunks);
}

function busboyOf(body: Buffer, contentType: string) {
  return parseFormWithBusboy(body, { 'content-type': contentType }, LIMITS);
}

const fieldName = fc.stringMatching(/^[a-z_][a-z0-9_]{0,19}$/);
const form = fc.record({
  fields: fc.array(fc.tuple(fieldName, fc.string({ unit: 'grapheme', maxLength: 200 })), { maxLength: 6 }),
  file: fc.option(
    fc.record({
      bytes: fc.uint8Array({ maxLength: 3000 }),
      // Not `.` or `..`, which busboy empties: those are declined (see the test of what is declined).
      filename: fc.stringMatching(/^[A-Za-z0-9 _-][A-Za-z0-9 ._-]{0,29}$/),
      type: fc.constantFrom('', 'text/plain', 'application/octet-stream', 'image/png', 'application/json'),
    }),
    { nil: undefined },
  ),
  fileAt: fc.nat(),
});

describe('parseSmallForm', () => {
  it('reads every form fetch encodes, part for part as busboy does', async () => {
    await fc.assert(
      fc.asyncProperty(form, async ({ fields, file, fileAt }) => {
        const data = new FormData();
        const at = file ? fileAt % (fields.length + 1) : -1;
        fields.forEach(([name, value], i) => {
          if (i === at) data.append('file', new Blob([file!.bytes], { type: file!.type }), file!.filename);
          data.append(name, value);
        });
        if (file && at === fields.length) data.append('file', new Blob([file.bytes], { type: file.type }), file.filename);
        if (fields.length === 0 && !file) data.append('only', 'field');
        const { body, contentType } = await encode(data);
        const parsed = parseSmallForm(body, contentType, LIMITS);
        expect(parsed).not.toBeNull();
        expect(parsed).toEqual(await busboyOf(body, contentType));
      }),
      { numRuns: 200 },
    );
  });

  it('parses a damaged form only where busboy reads the same parts from it', async () => {
    const damaged = fc
      .tuple(form, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('cut', 'flip'))
      .map(([f, at, byte, how]) => ({ f, at, byte, how }));
    await fc.assert(
      fc.asyncProperty(damaged, async ({ f, at, byte, how }) => {
        const data = new FormData();
        for (const [name, value] of f.fields) data.append(name, value);
        data.append('file', new Blob([f.file?.bytes ?? new Uint8Array(3)], { type: f.file?.type ?? '' }), f.file?.filename ?? 'f');
        const { body, contentType } = await encode(data);
        const position = at % body.length;
        const bytes = how === 'cut' ? body.subarray(0, position) : Buffer.from(body);
        if (how === 'flip') bytes[position] = byte;
        const parsed = parseSmallForm(bytes, contentType, LIMITS);
        if (parsed !== null) expect(parsed).toEqual(await busboyOf(bytes, contentType));
      }),
      { numRuns: 300 },
    );
  });

  it('declines what it does not read itself, and busboy still reads it', async () => {
    const file = 'Content-Disposition: form-data; name="file"; filename="a.txt"';
    const declined: [string, Buffer, string?][] = [
      ['a preamble', Buffer.concat([Buffer.from('preamble\r\n'), handmade([[file, 'x']])])],
      ['a file name with a path', handmade([['Content-Disposition: form-data; name="file"; filename="dir/a.txt"', 'x']])],
      ['an encoded file name', handmade([['Content-Disposition: form-data; name="file"; filename*=utf-8\'\'%C3%BC.txt', 'x']])],
      ['a non-ASCII header', handmade([['Content-Disposition: form-data; name="file"; filename="ü.txt"', 'x']])],
      ['a type with parameters', handmade([[`${file}\r\nContent-Type: text/plain; charset=latin1`, 'x']])],
      ['another header', handmade([[`${file}\r\nContent-Transfer-Encoding: binary`, 'x']])],
      ['an unquoted name', handmade([['Content-Disposition: form-data; name=file; filename="a.txt"', 'x']])],
      ['a quoted boundary', handmade([[file, 'x']]), `multipart/form-data; boundary="${BOUNDARY}"`],
      ['an epilogue', handmade([[file, 'x']], '\r\ntrailing words')],
      ['a file name busboy empties', handmade([['Content-Disposition: form-data; name="file"; filename=".."', 'x']])],
      ['a bare LF in a header', handmade([[`${file}\r\nContent-Type:\nimage/png`, 'x']])],
      ['a tab in a header', handmade([[`${file}\r\nContent-Type:\timage/png`, 'x']])],
    ];
    for (const [what, body, contentType = CONTENT_TYPE] of declined) {
      const quoted = contentType !== CONTENT_TYPE;
      expect(parseSmallForm(body, contentType, LIMITS), what).toEqual(quoted ? await busboyOf(body, contentType) : null);
      expect((await busboyOf(body, contentType)).length, what).toBe(1);
    }
  });

  it('leaves forms over the limits to busboy, which refuses them with 413', async () => {
    const field = (i: number): [string, string] => [`Content-Disposition: form-data; name="f${i}"`, 'v'];
    const tooMany = handmade(Array.from({ length: 11 }, (_, i) => field(i)));
    expect(parseSmallForm(tooMany, CONTENT_TYPE, LIMITS)).toBeNull();
    await expect(busboyOf(tooMany, CONTENT_TYPE)).rejects.toBeInstanceOf(PayloadTooLarge);
    const file = (i: number): [string, string] => [`Content-Disposition: form-data; name="file"; filename="${i}.txt"`, 'x'];
    const twoFiles = handmade([file(1), file(2)]);
    expect(parseSmallForm(twoFiles, CONTENT_TYPE, LIMITS)).toBeNull();
    await expect(busboyOf(twoFiles, CONTENT_TYPE)).rejects.toBeInstanceOf(PayloadTooLarge);
    const long = handmade([[`Content-Disposition: form-data; name="metadata"`, 'x'.repeat(LIMITS.fieldSize + 1)]]);
    expect(parseSmallForm(long, CONTENT_TYPE, LIMITS)).toBeNull();
    expect(await busboyOf(long, CONTENT_TYPE)).toEqual([
      { kind: 'field', name: 'metadata', value: 'x'.repeat(LIMITS.fieldSize), truncated: true },
    ]);
  });

  it('reads a file part without a type as busboy does: text/plain', () => {
    const body = handmade([['Content-Disposition: form-data; name="file"; filename="a.bin"', Buffer.from([0, 1, 2])]]);
    expect(parseSmallForm(body, CONTENT_TYPE, LIMITS)).toEqual([
      { kind: 'file', name: 'file', filename: 'a.bin', mimetype: 'text/plain', content: Buffer.from([0, 1, 2]) },
    ]);
  });
});

describe('parseFormWithBusboy', () => {
  it('refuses a multipart type without a boundary as a bad request', async () => {
    await expect(busboyOf(handmade([['Content-Disposition: form-data; name="a"', 'b']]), 'multipart/form-data')).rejects.toMatchObject({
      status: 400,
      code: 'invalid_request',
    });
  });
});
