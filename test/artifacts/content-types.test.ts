import { expect, it } from 'vitest';
import type { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { blobFiles, bytesOf, createArtifact, download, inlineContents, sendForm } from './fixtures.js';

/** Types a header cannot carry, or that are no media type: each must be a 400 wherever it enters. */
const BAD_TYPES = {
  control: 'text/plain\u0001',
  newline: 'text/plain\r\nX-Injected: 1',
  'above U+00FF': 'text/plain; name=\u0100',
  latin1: 'text/plain; name=caf\u00e9',
  'parameter without a value': 'text/plain; charset',
  'no subtype': 'text',
};

/** A multipart form whose file part carries `type` as its own Content-Type, byte for byte (FormData would drop it). */
function rawForm(type: string): { body: Uint8Array; headers: Record<string, string> } {
  const boundary = 'content-type-test-boundary';
  const text =
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: ${type}\r\n\r\n` +
    `bytes of ${JSON.stringify(type)}\r\n--${boundary}--\r\n`;
  return { body: new Uint8Array(Buffer.from(text, 'utf8')), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

async function stored(server: ReturnType<typeof useServer>): Promise<unknown> {
  const { db } = server.app.platform.database;
  const count = async (table: 'artifacts' | 'artifact_versions' | 'artifact_uploads') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    artifacts: await count('artifacts'),
    versions: await count('artifact_versions'),
    uploads: await count('artifact_uploads'),
    inline: await inlineContents(server),
    blobs: await blobFiles(server),
  };
}

function expectContentTypeRefused(res: { status: number; text: string; body: any }, label: string): void {
  expect(res.status, `${label}: ${res.text}`).toBe(400);
  expect(res.body.error.code, label).toBe('invalid_request');
  expect(JSON.stringify(res.body.error.details ?? res.body.error.message), label).toMatch(/content_type|Content-Type|Multipart|multipart/i);
}

describeEachDialect('Artifacts: content types are header text', (dialect) => {
  const server = useServer(dialect);

  it('refuses a bad content type at every entry point with a 400, storing nothing', async () => {
    const owner: Api = await server.agent('types-owner');
    const existing = await createArtifact(owner, { bytes: 'version one', content_type: 'text/plain' });
    const before = await stored(server);
    for (const [label, type] of Object.entries(BAD_TYPES)) {
      expectContentTypeRefused(await sendForm(owner, { bytes: 'new', content_type: type }), `create field, ${label}`);
      expectContentTypeRefused(await sendForm(owner, { id: existing.id, bytes: 'v2', content_type: type }), `new version field, ${label}`);
      expectContentTypeRefused(
        await owner.post('/api/v1/artifacts/upload-url', { name: 'big.bin', content_type: type, size_bytes: 10 }),
        `upload url, ${label}`,
      );
      // A file part's own type reaches the server without its parameters (the form parser keeps
      // type/subtype), and a CRLF there only ends the header: its type/subtype is what is checked.
      if (type.includes(';') || type.includes('\n')) continue;
      const form = rawForm(type);
      expectContentTypeRefused(
        await owner.request('POST', '/api/v1/artifacts', { body: form.body, raw: true, headers: form.headers }),
        `create file part, ${label}`,
      );
      expectContentTypeRefused(
        await owner.request('PUT', `/api/v1/artifacts/${existing.id}`, { body: form.body, raw: true, headers: form.headers }),
        `new version file part, ${label}`,
      );
    }
    expect(await stored(server)).toEqual(before);
    const current = await download(owner, `/api/v1/artifacts/${existing.id}/download`);
    expect([current.status, current.text, current.headers.get('content-type')]).toEqual([200, 'version one', 'text/plain']);
  });

  it('keeps media types with parameters, and serves them back as sent', async () => {
    const owner = await server.agent('types-params');
    for (const type of ['text/plain; charset=utf-8', 'application/vnd.example+json;version="1 (beta)"', 'text/csv;header=present']) {
      const art = await createArtifact(owner, { bytes: 'a,b', content_type: type });
      expect(art.content_type).toBe(type);
      expect((await download(owner, `/api/v1/artifacts/${art.id}/download`)).headers.get('content-type')).toBe(type);
    }
    const form = rawForm('text/markdown');
    const res = await owner.request('POST', '/api/v1/artifacts', { body: form.body, raw: true, headers: form.headers });
    expect([res.status, res.body.data?.content_type]).toEqual([201, 'text/markdown']);
    const intent = await owner.post('/api/v1/artifacts/upload-url', {
      name: 'x.txt',
      content_type: 'text/plain; charset=utf-8',
      size_bytes: 1,
    });
    expect(intent.status, intent.text).toBe(201);
  });

  it('serves a type stored before the check as application/octet-stream instead of failing the download', async () => {
    const owner = await server.agent('types-legacy');
    const { db } = server.app.platform.database;
    // Held in the database (sent whole) and in the blob store (streamed): both once answered 500.
    for (const [bytes, type] of [
      [new TextEncoder().encode('legacy'), 'text/plain; name=\u0100'],
      [bytesOf(70 * 1024), 'text/plain\u0001'],
    ] as const) {
      const art = await createArtifact(owner, { bytes, content_type: 'text/plain' });
      await db.updateTable('artifact_versions').set({ content_type: type }).where('artifact_id', '=', art.id).execute();
      const res = await download(owner, `/api/v1/artifacts/${art.id}/download`);
      expect([res.status, res.bytes.length, res.headers.get('content-type')]).toEqual([200, bytes.length, 'application/octet-stream']);
    }
  });
});
