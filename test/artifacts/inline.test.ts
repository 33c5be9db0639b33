import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { blobFiles, bytesOf, createArtifact, download, inlineContents, sendForm, sha256, storedContent } from './fixtures.js';

/** A small inline limit, so contents on both sides of it stay small. */
const INLINE = 1024;

const same = (got: Uint8Array, want: Uint8Array) => Buffer.from(got).equals(Buffer.from(want));

describeEachDialect('Artifacts: small contents kept in the database', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_ARTIFACT_INLINE_BYTES: String(INLINE) } });

  it('creates, downloads (Range, ETag, If-None-Match, signed URL), versions and deletes an inline content', async () => {
    const owner = await server.agent('inliner');
    const bytes = bytesOf(1000);
    const art = await createArtifact(owner, { bytes, name: 'small.bin', content_type: 'application/x-small' });
    expect(art).toMatchObject({ size_bytes: 1000, sha256: sha256(bytes), version: 1 });
    expect(await storedContent(server, sha256(bytes))).toEqual({ inline: true, file: false });

    const url = `/api/v1/artifacts/${art.id}/download`;
    const whole = await download(owner, url);
    expect(whole.status).toBe(200);
    expect(same(whole.bytes, bytes)).toBe(true);
    expect(whole.headers.get('content-type')).toBe('application/x-small');
    expect(whole.headers.get('content-length')).toBe('1000');
    expect(whole.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
    for (const [range, start, end] of [
      ['bytes=0-9', 0, 9],
      ['bytes=990-', 990, 999],
      ['bytes=-25', 975, 999],
    ] as const) {
      const part = await download(owner, url, { range });
      expect(part.status, range).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes ${start}-${end}/1000`);
      expect(part.headers.get('content-length')).toBe(String(end - start + 1));
      expect(same(part.bytes, bytes.subarray(start, end + 1)), range).toBe(true);
    }
    expect((await download(owner, url, { range: 'bytes=1000-' })).status).toBe(416);
    expect((await download(owner, url, { 'if-none-match': `"${sha256(bytes)}"` })).status).toBe(304);
    const signed = await owner.post(`/api/v1/artifacts/${art.id}/signed-url`, { expires_in: 60 });
    expect(same((await download(owner, signed.body.data.url, { range: 'bytes=5-14' }, null)).bytes, bytes.subarray(5, 15))).toBe(true);

    // Version 2 at the limit stays inline; version 3, one byte over it, goes to a file.
    const atLimit = bytesOf(INLINE);
    const overLimit = bytesOf(INLINE + 1);
    expect((await sendForm(owner, { id: art.id, bytes: atLimit })).body.data.version).toBe(2);
    expect((await sendForm(owner, { id: art.id, bytes: overLimit })).body.data.version).toBe(3);
    expect(await storedContent(server, sha256(atLimit))).toEqual({ inline: true, file: false });
    expect(await storedContent(server, sha256(overLimit))).toEqual({ inline: false, file: true });
    const versions = (await owner.get(`/api/v1/artifacts/${art.id}/versions`)).body.data.versions;
    expect(versions.map((v: any) => [v.version, v.size_bytes])).toEqual([
      [3, INLINE + 1],
      [2, INLINE],
      [1, 1000],
    ]);
    for (const [version, want] of [
      [1, bytes],
      [2, atLimit],
      [3, overLimit],
    ] as const) {
      const got = await download(owner, `${url}?version=${version}`);
      expect(same(got.bytes, want), `version ${version}`).toBe(true);
      expect(got.headers.get('etag')).toBe(`"${sha256(want)}"`);
    }

    const removed = await owner.delete(`/api/v1/artifacts/${art.id}/versions/2`);
    expect(removed.status).toBe(200);
    expect(await storedContent(server, sha256(atLimit))).toEqual({ inline: false, file: false });
    expect((await owner.delete(`/api/v1/artifacts/${art.id}`)).status).toBe(200);
    expect(await inlineContents(server)).toEqual([]);
    expect(await blobFiles(server)).toEqual([]);
  });

  it('stores a content once however many artifacts hold it, and keeps it while one does', async () => {
    const owner = await server.agent('deduper');
    const bytes = bytesOf(500);
    const snippet = { words: 'x'.repeat(100) };
    const [a, b] = [await createArtifact(owner, { bytes }), await createArtifact(owner, { bytes })];
    const c = await owner.post('/api/v1/artifacts/snippets', { name: 'snip', content: snippet });
    expect(c.status).toBe(201);
    expect(await inlineContents(server)).toEqual([sha256(bytes), c.body.data.sha256].sort());
    expect(JSON.parse((await download(owner, `/api/v1/artifacts/${c.body.data.id}/download`)).text)).toEqual(snippet);
    await owner.delete(`/api/v1/artifacts/${a.id}`);
    expect(same((await download(owner, `/api/v1/artifacts/${b.id}/download`)).bytes, bytes)).toBe(true);
    await owner.delete(`/api/v1/artifacts/${b.id}`);
    await owner.delete(`/api/v1/artifacts/${c.body.data.id}`);
    expect(await inlineContents(server)).toEqual([]);
  });

  it('keeps upload-URL bytes inline until confirmed, and drops them on a mismatch', async () => {
    const owner = await server.agent('small-uploader');
    const bytes = bytesOf(700);
    const put = async (declared: number) => {
      const intent = await owner.post('/api/v1/artifacts/upload-url', { name: 'u', content_type: 'text/plain', size_bytes: declared });
      const res = await fetch(intent.body.data.url, {
        method: 'PUT',
        body: bytes,
        headers: { 'content-type': 'application/octet-stream' },
      });
      expect(res.status).toBe(200);
      expect(await storedContent(server, sha256(bytes))).toEqual({ inline: true, file: false });
      return owner.post(`/api/v1/artifacts/upload-url/${intent.body.data.upload_id}/confirm`);
    };
    expect((await put(701)).status).toBe(409);
    expect(await inlineContents(server)).toEqual([]);
    const confirmed = await put(700);
    expect(confirmed.status).toBe(201);
    expect(same((await download(owner, `/api/v1/artifacts/${confirmed.body.data.id}/download`)).bytes, bytes)).toBe(true);
    await owner.delete(`/api/v1/artifacts/${confirmed.body.data.id}`);
    expect(await inlineContents(server)).toEqual([]);
  });
});

describeEachDialect('Artifacts: one content stored inline and as a file', (dialect) => {
  const database = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;
  /** A server on the suite's database with the given inline limit (a restart changes it). */
  const serve = (inline: number) =>
    startServer(dialect, { database: database(), adminKey, env: { SWITCHBOARD_ARTIFACT_INLINE_BYTES: String(inline) } });

  async function holders(server: TestServer, bytes: Uint8Array, ids: string[]) {
    for (const id of ids) expect(same((await download(server.api, `/api/v1/artifacts/${id}/download`)).bytes, bytes), id).toBe(true);
  }

  it.each([
    { first: 0, then: INLINE, label: 'a file, then inline' },
    { first: INLINE, then: 0, label: 'inline, then a file' },
  ])('serves and deletes one sha256 stored as $label, keeping it while referenced', async ({ first, then }) => {
    const bytes = bytesOf(800);
    const sha = sha256(bytes);
    const before = await serve(first);
    const ids: string[] = [];
    try {
      ids.push((await createArtifact(before.api, { bytes })).id);
      expect(await storedContent(before, sha)).toEqual({ inline: first > 0, file: first === 0 });
    } finally {
      await before.close();
    }
    // The limit changed (a restart): the same bytes arrive again and are kept the new way too.
    const after = await serve(then);
    try {
      await holders(after, bytes, ids);
      const again = await createArtifact(after.api, { bytes });
      const version = await sendForm(after.api, { id: ids[0], bytes });
      expect(version.status).toBe(200);
      ids.push(again.id);
      expect(await storedContent(after, sha)).toEqual({ inline: true, file: true });
      await holders(after, bytes, ids);
      expect((await download(after.api, `/api/v1/artifacts/${ids[0]}/download?version=1`, { range: 'bytes=100-199' })).bytes).toEqual(
        bytes.subarray(100, 200),
      );

      await after.api.delete(`/api/v1/artifacts/${ids[0]}`);
      expect(await storedContent(after, sha)).toEqual({ inline: true, file: true });
      await holders(after, bytes, ids.slice(1));
      await after.api.delete(`/api/v1/artifacts/${ids[1]}`);
      expect(await storedContent(after, sha)).toEqual({ inline: false, file: false });
      expect(await inlineContents(after)).toEqual([]);
      expect(await blobFiles(after)).toEqual([]);
    } finally {
      await after.close();
    }
  });
});
