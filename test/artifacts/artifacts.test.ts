import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import {
  blobFiles,
  bytesOf,
  contentExists,
  createArtifact,
  download,
  inlineContents,
  sendForm,
  sha256,
  storedContent,
} from './fixtures.js';

describeEachDialect('Artifacts: files, snippets, versions, downloads', (dialect) => {
  const server = useServer(dialect);

  it('creates from a multipart upload and downloads the same bytes with their headers', async () => {
    const owner = await server.agent('writer');
    const bytes = bytesOf(300_000);
    const res = await sendForm(owner, {
      bytes,
      name: 'report é.bin',
      content_type: 'application/x-report',
      metadata: { team: 'red', n: 1 },
    });
    expect(res.status).toBe(201);
    const art = res.body.data;
    expect(art).toMatchObject({
      name: 'report é.bin',
      content_type: 'application/x-report',
      size_bytes: bytes.length,
      sha256: sha256(bytes),
      metadata: { team: 'red', n: 1 },
      version: 1,
      owner: 'writer',
    });
    expect(art.id).toMatch(/^art_/);
    expect(art.created_at).toMatch(/Z$/);
    expect((await owner.get(`/api/v1/artifacts/${art.id}`)).body.data).toEqual(art);

    const got = await download(owner, `/api/v1/artifacts/${art.id}/download`);
    expect(got.status).toBe(200);
    expect(Buffer.from(got.bytes).equals(Buffer.from(bytes))).toBe(true);
    expect(got.headers.get('content-type')).toBe('application/x-report');
    expect(got.headers.get('content-length')).toBe(String(bytes.length));
    expect(got.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
    expect(got.headers.get('content-disposition')).toBe(`attachment; filename="report _.bin"; filename*=UTF-8''report%20%C3%A9.bin`);
    // Above the inline limit (64 KiB by default): a blob file, not a database row.
    expect(await storedContent(server, sha256(bytes))).toEqual({ inline: false, file: true });
  });

  it('defaults name and content type from the file part and reads fields sent after the file', async () => {
    const owner = await server.agent('writer');
    const form = new FormData();
    form.append('file', new Blob(['hello'], { type: 'text/plain' }), 'hello.txt');
    form.append('metadata', '{"late": true}');
    const res = await owner.request('POST', '/api/v1/artifacts', { body: form as unknown as string, raw: true });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'hello.txt', content_type: 'text/plain', metadata: { late: true }, size_bytes: 5 });
  });

  it('rejects bad forms with 400/415 and keeps nothing of them', async () => {
    const owner = await server.agent('writer');
    const before = await blobFiles(server);
    const inlineBefore = await inlineContents(server);
    const cases: [Parameters<typeof sendForm>[1], string][] = [
      [{ bytes: 'x1', metadata: '{not json' }, 'metadata'],
      [{ bytes: 'x2', metadata: [1, 2] }, 'metadata'],
      [{ bytes: 'x3', content_type: 'not a type' }, 'content_type'],
      [{ bytes: 'x4', name: 'n'.repeat(256) }, 'name'],
      [{ name: 'no file' }, 'file'],
      [{ bytes: 'x5', extra: { colour: 'blue' } }, 'colour'],
    ];
    for (const [options, field] of cases) {
      const res = await sendForm(owner, options);
      expect(res.status, field).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details[0].field).toBe(field);
    }
    const json = await owner.post('/api/v1/artifacts', { name: 'x' });
    expect(json.status).toBe(415);
    expect(await blobFiles(server)).toEqual(before);
    expect(await inlineContents(server)).toEqual(inlineBefore);
    expect((await owner.get('/api/v1/artifacts')).body.meta.total).toBe(2);
  });

  it('reads forms the one-pass parser leaves to busboy, and refuses a form without a boundary with 400', async () => {
    const owner = await server.agent('writer');
    const boundary = 'b0undary';
    const form = (disposition: string, content = 'hello') =>
      `--${boundary}\r\n${disposition}\r\nContent-Type: text/plain\r\n\r\n${content}\r\n--${boundary}--\r\n`;
    const post = (body: string, contentType = `multipart/form-data; boundary=${boundary}`) =>
      owner.request('POST', '/api/v1/artifacts', { raw: true, body, headers: { 'content-type': contentType } });
    const encoded = await post(form(`Content-Disposition: form-data; name="file"; filename*=utf-8''%C3%BC.txt`));
    expect(encoded.status).toBe(201);
    expect(encoded.body.data).toMatchObject({ name: 'ü.txt', size_bytes: 5 });
    const withPath = await post(form('Content-Disposition: form-data; name="file"; filename="dir/report.txt"'));
    expect(withPath.body.data.name).toBe('report.txt');
    // Without a boundary, small (read whole) and large (streamed).
    for (const content of ['hello', 'x'.repeat(200_000)]) {
      const unbounded = await post(form('Content-Disposition: form-data; name="file"; filename="a.txt"', content), 'multipart/form-data');
      expect(unbounded.status).toBe(400);
      expect(unbounded.body.error.code).toBe('invalid_request');
    }
  });

  it('stores JSON snippets', async () => {
    const owner = await server.agent('snipper');
    const content = { steps: [1, 2, { deep: 'ünïcode' }], ok: true, none: null };
    const res = await owner.post('/api/v1/artifacts/snippets', { name: 'plan.json', content, metadata: { kind: 'plan' } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      name: 'plan.json',
      content_type: 'application/json',
      version: 1,
      metadata: { kind: 'plan' },
      owner: 'snipper',
    });
    const got = await download(owner, `/api/v1/artifacts/${res.body.data.id}/download`);
    expect(JSON.parse(got.text)).toEqual(content);
    expect(got.headers.get('content-type')).toMatch(/^application\/json/);
    const scalar = await owner.post('/api/v1/artifacts/snippets', { name: 'n', content: 42 });
    expect(JSON.parse((await download(owner, `/api/v1/artifacts/${scalar.body.data.id}/download`)).text)).toBe(42);
    expect((await owner.post('/api/v1/artifacts/snippets', { name: 'n' })).status).toBe(400);
    expect((await owner.post('/api/v1/artifacts/snippets', { name: 'n', content: 1, colour: 'x' })).status).toBe(400);
  });

  it('creates versions with PUT, lists them newest first and downloads each byte for byte', async () => {
    const owner = await server.agent('versioner');
    const contents = [bytesOf(1000), bytesOf(2000), bytesOf(10)];
    const art = await createArtifact(owner, { bytes: contents[0], name: 'v.bin', metadata: { a: 1 } });
    const v2 = await sendForm(owner, { id: art.id, bytes: contents[1], content_type: 'text/plain' });
    expect(v2.status).toBe(200);
    expect(v2.body.data).toMatchObject({
      id: art.id,
      version: 2,
      size_bytes: 2000,
      sha256: sha256(contents[1]!),
      content_type: 'text/plain',
      metadata: { a: 1 },
      name: 'v.bin',
    });
    const v3 = await sendForm(owner, { id: art.id, bytes: contents[2], name: 'renamed.bin', metadata: { b: 2 } });
    expect(v3.body.data).toMatchObject({ version: 3, name: 'renamed.bin', metadata: { b: 2 } });

    const versions = await owner.get(`/api/v1/artifacts/${art.id}/versions`);
    expect(versions.status).toBe(200);
    expect(versions.body.data.versions.map((v: any) => v.version)).toEqual([3, 2, 1]);
    expect(versions.body.data.versions[2]).toMatchObject({ size_bytes: 1000, sha256: sha256(contents[0]!), created_by: 'versioner' });
    for (const [i, bytes] of contents.entries()) {
      const got = await download(owner, `/api/v1/artifacts/${art.id}/download?version=${i + 1}`);
      expect(got.status).toBe(200);
      expect(Buffer.from(got.bytes).equals(Buffer.from(bytes)), `version ${i + 1}`).toBe(true);
      expect(got.headers.get('x-artifact-version')).toBe(String(i + 1));
    }
    const latest = await download(owner, `/api/v1/artifacts/${art.id}/download`);
    expect(Buffer.from(latest.bytes).equals(Buffer.from(contents[2]!))).toBe(true);
    expect((await download(owner, `/api/v1/artifacts/${art.id}/download?version=9`)).status).toBe(404);
    expect((await sendForm(owner, { id: 'art_missing', bytes: 'x' })).status).toBe(404);
  });

  it('honours If-Match on PUT: 412 on a stale sha256, nothing stored', async () => {
    const owner = await server.agent('cas');
    const first = bytesOf(100);
    const art = await createArtifact(owner, { bytes: first });
    const stale = await sendForm(owner, { id: art.id, bytes: bytesOf(50), headers: { 'if-match': `"${'0'.repeat(64)}"` } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe('precondition_failed');
    const fresh = await sendForm(owner, { id: art.id, bytes: 'next', headers: { 'if-match': `"${sha256(first)}"` } });
    expect(fresh.status).toBe(200);
    expect(fresh.body.data.version).toBe(2);
    const unquoted = await sendForm(owner, { id: art.id, bytes: 'third', headers: { 'if-match': sha256('next') } });
    expect(unquoted.body.data.version).toBe(3);
    const versions = await owner.get(`/api/v1/artifacts/${art.id}/versions`);
    expect(versions.body.data.versions).toHaveLength(3);
  });

  it('lets exactly one of two concurrent conditional writers win; unconditional ones get distinct versions', async () => {
    const owner = await server.agent('racer');
    const art = await createArtifact(owner, { bytes: 'base' });
    const ifMatch = { 'if-match': sha256('base') };
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => sendForm(owner, { id: art.id, bytes: `writer ${i}`, headers: ifMatch })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412, 412, 412, 412]);
    const free = await Promise.all(Array.from({ length: 5 }, (_, i) => sendForm(owner, { id: art.id, bytes: `free ${i}` })));
    expect(free.map((r) => r.body.data.version).sort()).toEqual([3, 4, 5, 6, 7]);
    const versions = await owner.get(`/api/v1/artifacts/${art.id}/versions`);
    expect(versions.body.data.versions.map((v: any) => v.version)).toEqual([7, 6, 5, 4, 3, 2, 1]);
  });

  it('serves Range requests (206, suffix, open-ended, 416) and If-None-Match (304)', async () => {
    const owner = await server.agent('ranger');
    const bytes = bytesOf(1000);
    const art = await createArtifact(owner, { bytes });
    const url = `/api/v1/artifacts/${art.id}/download`;
    const cases: [string, number, number][] = [
      ['bytes=0-9', 0, 9],
      ['bytes=990-', 990, 999],
      ['bytes=-25', 975, 999],
      ['bytes=100-5000', 100, 999],
    ];
    for (const [range, start, end] of cases) {
      const got = await download(owner, url, { range });
      expect(got.status, range).toBe(206);
      expect(got.headers.get('content-range')).toBe(`bytes ${start}-${end}/1000`);
      expect(got.headers.get('content-length')).toBe(String(end - start + 1));
      expect(Buffer.from(got.bytes).equals(Buffer.from(bytes.subarray(start, end + 1))), range).toBe(true);
    }
    const beyond = await download(owner, url, { range: 'bytes=1000-' });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe('bytes */1000');
    expect((await download(owner, url, { range: 'bytes=0-1,5-6' })).status).toBe(200);

    const etag = `"${sha256(bytes)}"`;
    const cached = await download(owner, url, { 'if-none-match': etag });
    expect(cached.status).toBe(304);
    expect(cached.bytes).toHaveLength(0);
    expect(cached.headers.get('etag')).toBe(etag);
    expect((await download(owner, url, { 'if-none-match': `W/"other", ${etag}` })).status).toBe(304);
    expect((await download(owner, url, { 'if-none-match': '"other"' })).status).toBe(200);
  });

  it('deletes versions: never the only one, the newest hands over, numbers are not reused', async () => {
    const owner = await server.agent('pruner');
    const art = await createArtifact(owner, { bytes: 'one' });
    const only = await owner.delete(`/api/v1/artifacts/${art.id}/versions/1`);
    expect(only.status).toBe(409);
    await sendForm(owner, { id: art.id, bytes: 'two' });
    await sendForm(owner, { id: art.id, bytes: 'three' });
    const newest = await owner.delete(`/api/v1/artifacts/${art.id}/versions/3`);
    expect(newest.status).toBe(200);
    expect(newest.body.data).toEqual({ id: art.id, version: 3, deleted: true, current_version: 2 });
    const meta = (await owner.get(`/api/v1/artifacts/${art.id}`)).body.data;
    expect(meta).toMatchObject({ version: 2, sha256: sha256('two'), size_bytes: 3 });
    expect((await download(owner, `/api/v1/artifacts/${art.id}/download`)).text).toBe('two');
    expect((await download(owner, `/api/v1/artifacts/${art.id}/download?version=3`)).status).toBe(404);
    expect(await contentExists(server, sha256('three'))).toBe(false);
    expect((await owner.delete(`/api/v1/artifacts/${art.id}/versions/3`)).status).toBe(404);

    const middle = await owner.delete(`/api/v1/artifacts/${art.id}/versions/1`);
    expect(middle.body.data.current_version).toBe(2);
    const next = await sendForm(owner, { id: art.id, bytes: 'four' });
    expect(next.body.data.version).toBe(4);
    expect((await owner.get(`/api/v1/artifacts/${art.id}/versions`)).body.data.versions.map((v: any) => v.version)).toEqual([4, 2]);
  });

  it('deletes an artifact with all its versions; blobs shared by content stay while referenced', async () => {
    const owner = await server.agent('deleter');
    const shared = bytesOf(5000);
    const own = bytesOf(4000);
    const a = await createArtifact(owner, { bytes: shared });
    await sendForm(owner, { id: a.id, bytes: own });
    const b = await createArtifact(owner, { bytes: shared });
    const res = await owner.delete(`/api/v1/artifacts/${a.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: a.id, deleted: true });
    expect((await owner.get(`/api/v1/artifacts/${a.id}`)).status).toBe(404);
    expect((await owner.get(`/api/v1/artifacts/${a.id}/versions`)).status).toBe(404);
    expect(await contentExists(server, sha256(own))).toBe(false);
    expect(await contentExists(server, sha256(shared))).toBe(true);
    const still = await download(owner, `/api/v1/artifacts/${b.id}/download`);
    expect(Buffer.from(still.bytes).equals(Buffer.from(shared))).toBe(true);
    await owner.delete(`/api/v1/artifacts/${b.id}`);
    expect(await contentExists(server, sha256(shared))).toBe(false);
    expect((await owner.delete(`/api/v1/artifacts/${b.id}`)).status).toBe(404);
  });

  it('lists by content type (exact or type/*) and metadata containment, with paging', async () => {
    const lister = await server.agent('lister');
    await createArtifact(lister, {
      bytes: 'a',
      content_type: 'text/plain',
      metadata: { project: 'x', tags: ['red', 'big'], dims: { w: 1, h: 2 } },
    });
    await createArtifact(lister, { bytes: 'b', content_type: 'text/csv', metadata: { project: 'x', tags: ['blue'] } });
    await createArtifact(lister, { bytes: 'c', content_type: 'image/png', metadata: { project: 'y', n: 3 } });
    await createArtifact(lister, { bytes: 'd', content_type: 'text/plainer', metadata: {} });
    const names = async (query: string) => {
      const res = await lister.get(`/api/v1/artifacts?${query}`);
      expect(res.status, query).toBe(200);
      return res.body.data.map((a: any) => a.content_type).sort();
    };
    expect(await names('content_type=text/plain')).toEqual(['text/plain']);
    expect(await names('content_type=text/*')).toEqual(['text/csv', 'text/plain', 'text/plainer']);
    expect(await names('content_type=image/*')).toEqual(['image/png']);
    const meta = (filter: unknown) => names(`metadata=${encodeURIComponent(JSON.stringify(filter))}`);
    expect(await meta({ project: 'x' })).toEqual(['text/csv', 'text/plain']);
    expect(await meta({ tags: ['red'] })).toEqual(['text/plain']);
    expect(await meta({ dims: { h: 2 } })).toEqual(['text/plain']);
    expect(await meta({ dims: { h: '2' } })).toEqual([]);
    expect(await meta({ n: 3.0, project: 'y' })).toEqual(['image/png']);
    expect(await meta({})).toHaveLength(4);
    expect(await names(`content_type=text/*&metadata=${encodeURIComponent('{"project":"x"}')}`)).toEqual(['text/csv', 'text/plain']);
    for (const bad of ['{nope', '[1]', '"x"']) {
      const res = await lister.get(`/api/v1/artifacts?metadata=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error.details[0].field).toBe('metadata');
    }
    expect((await lister.get('/api/v1/artifacts?content_type=nonsense')).status).toBe(400);
    const paged = await lister.get('/api/v1/artifacts?limit=2&offset=1');
    expect(paged.body.meta).toMatchObject({ total: 4, limit: 2, offset: 1 });
    expect(paged.body.data).toHaveLength(2);
  });
});
