import { generateKeyPairSync, sign } from 'node:crypto';
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { signingString } from '../../src/auth/signing.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { blobFiles, bytesOf, contentExists, createArtifact, download, formOf, inlineContents, sendForm, sha256 } from './fixtures.js';

/** PUTs raw bytes to an upload URL, without credentials. */
function putBytes(url: string, bytes: Uint8Array | string, headers: Record<string, string> = {}) {
  return fetch(url, { method: 'PUT', body: bytes, headers: { 'content-type': 'application/octet-stream', ...headers } });
}

type StreamOptions = { method: string; headers: Record<string, string>; preamble?: Buffer; chunk: Buffer; maxChunks: number };

/**
 * Sends a chunked body one chunk at a time until the server answers (or `maxChunks` are sent),
 * and reports the status and how many chunks went out: proof that an over-limit upload is cut
 * off while it streams, not after it has been read whole.
 */
function streamUntilAnswered(url: string, options: StreamOptions): Promise<{ status: number; chunksSent: number; body: string }> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const request = http.request(url, { method: options.method, headers: { ...options.headers, 'transfer-encoding': 'chunked' } });
    request.on('response', (response) => {
      answered = true;
      let body = '';
      response.on('data', (d: Buffer) => (body += d.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, chunksSent: sent, body }));
      request.destroy();
    });
    // The server ends the connection after answering (it reads and drops what follows meanwhile).
    request.on('error', (err) => (answered ? undefined : reject(err)));
    if (options.preamble) request.write(options.preamble);
    const pump = () => {
      if (answered) return;
      if (sent >= options.maxChunks) return request.end();
      sent++;
      // A real pace, as a slow uploader's: an answer given mid-stream arrives before all is sent.
      request.write(options.chunk, () => setTimeout(pump, 2));
    };
    pump();
  });
}

async function multipartBytes(form: FormData): Promise<{ bytes: Uint8Array; contentType: string }> {
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  return { bytes: new Uint8Array(await request.arrayBuffer()), contentType: request.headers.get('content-type')! };
}

describeEachDialect('Artifacts: upload intents and signed URLs', (dialect) => {
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock });

  it('creates an artifact from bytes PUT to an upload URL without credentials, then confirmed', async () => {
    const owner = await server.agent('big-uploader');
    const bytes = bytesOf(2 * 1024 * 1024 + 7);
    const intent = await owner.post('/api/v1/artifacts/upload-url', {
      name: 'big.bin',
      content_type: 'application/octet-stream',
      size_bytes: bytes.length,
      sha256: sha256(bytes),
      metadata: { via: 'upload-url' },
    });
    expect(intent.status).toBe(201);
    expect(intent.body.data.upload_id).toMatch(/^upl_/);
    expect(intent.body.data.url.startsWith(`${server.url}/api/v1/artifacts/uploads/`)).toBe(true);
    expect(Date.parse(intent.body.data.expires_at) - clock.now()).toBeGreaterThan(3590_000);
    const put = await putBytes(intent.body.data.url, bytes);
    expect(put.status).toBe(200);
    expect(((await put.json()) as any).data).toEqual({
      upload_id: intent.body.data.upload_id,
      size_bytes: bytes.length,
      sha256: sha256(bytes),
    });
    const confirmed = await owner.post(`/api/v1/artifacts/upload-url/${intent.body.data.upload_id}/confirm`);
    expect(confirmed.status).toBe(201);
    expect(confirmed.body.data).toMatchObject({
      name: 'big.bin',
      size_bytes: bytes.length,
      sha256: sha256(bytes),
      version: 1,
      owner: 'big-uploader',
      metadata: { via: 'upload-url' },
    });
    const got = await download(owner, `/api/v1/artifacts/${confirmed.body.data.id}/download`);
    expect(Buffer.from(got.bytes).equals(Buffer.from(bytes))).toBe(true);
    // Confirmed once: the intent is gone.
    expect((await owner.post(`/api/v1/artifacts/upload-url/${intent.body.data.upload_id}/confirm`)).status).toBe(404);
  });

  // Browsers send a .txt as text/plain; the server used to parse such a body (and JSON, up to
  // 1 MiB) before the route read it, so it hung or answered 413.
  it.each([
    { type: 'text/plain', bytes: new TextEncoder().encode('a small .txt file\n') },
    { type: 'text/plain', bytes: new TextEncoder().encode('plain text, as a browser sends a .txt\n'.repeat(60_000)) },
    { type: 'application/json', bytes: new TextEncoder().encode(JSON.stringify({ rows: 'x'.repeat(2 * 1024 * 1024) })) },
    { type: undefined, bytes: bytesOf(3000) },
    { type: 'application/x-made-up; charset=whatever', bytes: bytesOf(70_000) },
  ])('takes the raw bytes of an upload URL whatever their content type ($type)', async ({ type, bytes }) => {
    const owner = await server.agent('typed-uploader');
    const intent = await owner.post('/api/v1/artifacts/upload-url', {
      name: 'typed',
      content_type: type ?? 'application/octet-stream',
      size_bytes: bytes.length,
    });
    const put = await fetch(intent.body.data.url, {
      method: 'PUT',
      body: bytes,
      headers: type === undefined ? {} : { 'content-type': type },
      signal: AbortSignal.timeout(10_000),
    });
    expect(put.status).toBe(200);
    expect(((await put.json()) as any).data).toEqual({
      upload_id: intent.body.data.upload_id,
      size_bytes: bytes.length,
      sha256: sha256(bytes),
    });
    const confirmed = await owner.post(`/api/v1/artifacts/upload-url/${intent.body.data.upload_id}/confirm`);
    expect(confirmed.status).toBe(201);
    const got = await download(owner, `/api/v1/artifacts/${confirmed.body.data.id}/download`);
    expect(Buffer.from(got.bytes).equals(Buffer.from(bytes))).toBe(true);
  });

  it('refuses to confirm bytes that differ from the declaration (409) and discards them', async () => {
    const owner = await server.agent('mismatcher');
    const bytes = bytesOf(5000);
    const short = await owner.post('/api/v1/artifacts/upload-url', { name: 's', content_type: 'text/plain', size_bytes: 6000 });
    expect((await putBytes(short.body.data.url, bytes)).status).toBe(200);
    expect(await contentExists(server, sha256(bytes))).toBe(true);
    const res = await owner.post(`/api/v1/artifacts/upload-url/${short.body.data.upload_id}/confirm`);
    expect(res.status).toBe(409);
    expect(res.body.error.details).toEqual([{ field: 'size_bytes', message: 'declared 6000, received 5000' }]);
    expect(await contentExists(server, sha256(bytes))).toBe(false);
    expect((await owner.post(`/api/v1/artifacts/upload-url/${short.body.data.upload_id}/confirm`)).status).toBe(404);

    const wrongHash = await owner.post('/api/v1/artifacts/upload-url', {
      name: 'h',
      content_type: 'text/plain',
      size_bytes: 5000,
      sha256: sha256('something else'),
    });
    await putBytes(wrongHash.body.data.url, bytes);
    const bad = await owner.post(`/api/v1/artifacts/upload-url/${wrongHash.body.data.upload_id}/confirm`);
    expect(bad.status).toBe(409);
    expect(bad.body.error.details.map((d: { field: string }) => d.field)).toEqual(['sha256']);
    expect(await contentExists(server, sha256(bytes))).toBe(false);
    expect((await owner.get('/api/v1/artifacts')).body.meta.total).toBe(0);
  });

  it('guards upload URLs: signature, declared size, owner, order of steps', async () => {
    const owner = await server.agent('careful');
    const intent = await owner.post('/api/v1/artifacts/upload-url', { name: 'g', content_type: 'text/plain', size_bytes: 10 });
    const { url, upload_id } = intent.body.data;
    expect((await owner.post(`/api/v1/artifacts/upload-url/${upload_id}/confirm`)).status).toBe(409);
    const tampered = url.replace(/signature=[^&]+/, 'signature=AAAA');
    expect((await putBytes(tampered, '0123456789')).status).toBe(403);
    const otherId = url.replace(upload_id, 'upl_00000000000000000000000000');
    expect((await putBytes(otherId, '0123456789')).status).toBe(403);
    const tooBig = await putBytes(url, '0123456789AB');
    expect(tooBig.status).toBe(413);
    expect((await putBytes(url, 'first try!')).status).toBe(200);
    // A second PUT replaces the first one's bytes, which are dropped.
    expect((await putBytes(url, '0123456789')).status).toBe(200);
    expect(await contentExists(server, sha256('first try!'))).toBe(false);
    const stranger = await server.agent('not-the-owner');
    expect((await stranger.post(`/api/v1/artifacts/upload-url/${upload_id}/confirm`)).status).toBe(403);
    const done = await owner.post(`/api/v1/artifacts/upload-url/${upload_id}/confirm`);
    expect(done.status).toBe(201);
    expect((await download(owner, `/api/v1/artifacts/${done.body.data.id}/download`)).text).toBe('0123456789');
    expect(
      (await owner.post('/api/v1/artifacts/upload-url', { name: 'g', content_type: 'text/plain', size_bytes: 10, expires_in: 0 })).status,
    ).toBe(400);
    expect((await owner.post('/api/v1/artifacts/upload-url', { name: 'g', content_type: 'text/plain' })).status).toBe(400);
  });

  it('expires upload URLs (403) and sweeps expired uploads with their bytes', async () => {
    const owner = await server.agent('late');
    const bytes = bytesOf(3000);
    const intent = await owner.post('/api/v1/artifacts/upload-url', {
      name: 'l',
      content_type: 'text/plain',
      size_bytes: 3000,
      expires_in: 60,
    });
    expect((await putBytes(intent.body.data.url, bytes)).status).toBe(200);
    expect(await contentExists(server, sha256(bytes))).toBe(true);
    clock.advance(61_000);
    const late = await putBytes(intent.body.data.url, bytes);
    expect(late.status).toBe(403);
    expect(((await late.json()) as any).error.message).toMatch(/expired/);
    await waitFor(async () => !(await contentExists(server, sha256(bytes))), 5000);
    expect((await owner.post(`/api/v1/artifacts/upload-url/${intent.body.data.upload_id}/confirm`)).status).toBe(404);
  });

  it('signs download URLs bound to one version, usable without credentials until they expire', async () => {
    const owner = await server.agent('signer');
    const v1 = bytesOf(4000);
    const art = await createArtifact(owner, { bytes: v1, name: 'signed.bin' });
    const res = await owner.post(`/api/v1/artifacts/${art.id}/signed-url`, { expires_in: 120 });
    expect(res.status).toBe(201);
    const { url, expires_at, version } = res.body.data;
    expect(version).toBe(1);
    expect(Date.parse(expires_at)).toBe(Math.floor(clock.now() / 1000) * 1000 + 120_000);
    expect(url.startsWith(server.url)).toBe(true);
    const first = await download(owner, url, {}, null);
    expect(first.status).toBe(200);
    expect(Buffer.from(first.bytes).equals(Buffer.from(v1))).toBe(true);
    expect(first.headers.get('etag')).toBe(`"${sha256(v1)}"`);
    const part = await download(owner, url, { range: 'bytes=10-19' }, null);
    expect(part.status).toBe(206);
    expect(Buffer.from(part.bytes).equals(Buffer.from(v1.subarray(10, 20)))).toBe(true);

    // Still version 1 after a new version; another version in the path breaks the signature.
    await sendForm(owner, { id: art.id, bytes: 'version two' });
    expect(Buffer.from((await download(owner, url, {}, null)).bytes).equals(Buffer.from(v1))).toBe(true);
    expect((await download(owner, url.replace(`/${art.id}/1?`, `/${art.id}/2?`), {}, null)).status).toBe(403);
    expect(
      (
        await download(
          owner,
          url.replace(/expires=\d+/, (m: string) => `expires=${Number(m.slice(8)) + 1000}`),
          {},
          null,
        )
      ).status,
    ).toBe(403);
    const v2 = await owner.post(`/api/v1/artifacts/${art.id}/signed-url`, { expires_in: 60, version: 2 });
    expect((await download(owner, v2.body.data.url, {}, null)).text).toBe('version two');

    clock.advance(121_000);
    const expired = await download(owner, url, {}, null);
    expect(expired.status).toBe(403);
    expect(JSON.parse(expired.text).error).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/expired/) });

    for (const body of [{ expires_in: 0 }, { expires_in: 7 * 24 * 3600 + 1 }, {}, { expires_in: 10, extra: 1 }]) {
      expect((await owner.post(`/api/v1/artifacts/${art.id}/signed-url`, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await owner.post(`/api/v1/artifacts/${art.id}/signed-url`, { expires_in: 7 * 24 * 3600 })).status).toBe(201);
    expect((await owner.post(`/api/v1/artifacts/${art.id}/signed-url`, { expires_in: 10, version: 9 })).status).toBe(404);
    // Deleting the artifact ends its URLs.
    const live = await owner.post(`/api/v1/artifacts/${art.id}/signed-url`, { expires_in: 60 });
    await owner.delete(`/api/v1/artifacts/${art.id}`);
    expect((await download(owner, live.body.data.url, {}, null)).status).toBe(404);
  });

  it('checks a signed multipart upload against X-Content-SHA256', async () => {
    const agent = 'signing-uploader';
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
    expect((await server.api.post(`/api/v1/auth/agents/${agent}/public-keys`, { public_key: raw })).status).toBe(201);
    const signedPost = async (body: Uint8Array, contentType: string, declared: string) => {
      const timestamp = new Date(clock.now()).toISOString();
      const signature = sign(null, Buffer.from(signingString('POST', '/api/v1/artifacts', timestamp, declared)), privateKey).toString(
        'base64',
      );
      return server.api.request('POST', '/api/v1/artifacts', {
        key: null,
        raw: true,
        body,
        headers: {
          'content-type': contentType,
          'x-agent-id': agent,
          'x-timestamp': timestamp,
          'x-signature': signature,
          'x-content-sha256': declared,
        },
      });
    };
    // A small form is read whole, a large one streamed: each is checked against the declaration.
    for (const [i, content] of [new TextEncoder().encode('signed content'), bytesOf(200_000)].entries()) {
      clock.advance(1); // a new timestamp: the same signed string would be refused as a replay
      const good = await multipartBytes(formOf({ bytes: content, name: `signed-${i}.txt` }));
      const created = await signedPost(good.bytes, good.contentType, sha256(good.bytes));
      expect(created.status, created.text).toBe(201);
      expect(created.body.data).toMatchObject({ owner: agent, sha256: sha256(content) });

      const before = await blobFiles(server);
      const inlineBefore = await inlineContents(server);
      clock.advance(1);
      const forged = await multipartBytes(formOf({ bytes: bytesOf(content.length), name: `forged-${i}.txt` }));
      const rejected = await signedPost(forged.bytes, forged.contentType, sha256(good.bytes));
      expect(rejected.status).toBe(401);
      expect(rejected.body.error.message).toMatch(/X-Content-SHA256/);
      expect(await blobFiles(server)).toEqual(before);
      expect(await inlineContents(server)).toEqual(inlineBefore);
      const names = (await server.api.get(`/api/v1/artifacts?metadata=${encodeURIComponent('{}')}&limit=500`)).body.data.map(
        (a: any) => a.name,
      );
      expect(names).not.toContain(`forged-${i}.txt`);
    }
  });
});

// The limit is crossed once after the upload spilled from memory to a staging file, once while
// it is still held in memory (an inline limit above the upload limit).
for (const inline of [16 * 1024, 128 * 1024]) {
  describeEachDialect(`Artifacts: upload limit (inline up to ${inline} bytes)`, (dialect) => {
    const LIMIT = 64 * 1024;
    const server = useServer(dialect, {
      env: { SWITCHBOARD_MAX_UPLOAD_BYTES: String(LIMIT), SWITCHBOARD_ARTIFACT_INLINE_BYTES: String(inline) },
    });
    describe('over the limit', () => {
      it('answers 413 to a multipart upload, leaving no row and no blob', async () => {
        const owner = await server.agent('too-big');
        const res = await sendForm(owner, { bytes: bytesOf(LIMIT + 1), name: 'x' });
        expect(res.status).toBe(413);
        expect(res.body.error.code).toBe('payload_too_large');
        expect((await owner.get('/api/v1/artifacts')).body.meta.total).toBe(0);
        expect(await blobFiles(server)).toEqual([]);
        expect(await inlineContents(server)).toEqual([]);
        const exact = await sendForm(owner, { bytes: bytesOf(LIMIT), name: 'fits' });
        expect(exact.status).toBe(201);
        await owner.delete(`/api/v1/artifacts/${exact.body.data.id}`);
        expect(await blobFiles(server)).toEqual([]);
        expect(await inlineContents(server)).toEqual([]);
      });

      it('cuts a streamed upload off as soon as it crosses the limit', async () => {
        const owner = await server.agent('streamer');
        const { bytes: preamble, contentType } = await multipartBytes(formOf({ name: 'stream', bytes: '' }));
        // Everything of the form up to the (empty) file content, then endless file bytes.
        const text = Buffer.from(preamble).toString('latin1');
        const head = Buffer.from(text.slice(0, text.indexOf('\r\n\r\n', text.indexOf('filename=')) + 4), 'latin1');
        const chunk = Buffer.alloc(16 * 1024, 7);
        const multipart = await streamUntilAnswered(`${server.url}/api/v1/artifacts`, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner.key}`, 'content-type': contentType },
          preamble: head,
          chunk,
          maxChunks: 4096,
        });
        expect(multipart.status).toBe(413);
        expect(multipart.chunksSent).toBeLessThan(100);

        const intent = await owner.post('/api/v1/artifacts/upload-url', { name: 'r', content_type: 'text/plain', size_bytes: LIMIT });
        const rawPut = await streamUntilAnswered(intent.body.data.url, {
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream' },
          chunk,
          maxChunks: 4096,
        });
        expect(rawPut.status).toBe(413);
        expect(rawPut.chunksSent).toBeLessThan(100);
        await waitFor(async () => (await blobFiles(server)).length === 0);
        expect((await owner.get('/api/v1/artifacts')).body.meta.total).toBe(0);
      });

      it('refuses upload intents and snippets over the limit', async () => {
        const owner = await server.agent('planner');
        const intent = await owner.post('/api/v1/artifacts/upload-url', { name: 'r', content_type: 'text/plain', size_bytes: LIMIT + 1 });
        expect(intent.status).toBe(413);
        const snippet = await owner.post('/api/v1/artifacts/snippets', { name: 's', content: 'x'.repeat(LIMIT) });
        expect(snippet.status).toBe(413);
        expect(await blobFiles(server)).toEqual([]);
        expect(await inlineContents(server)).toEqual([]);
      });
    });
  });
}
