import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { useTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { blobFiles, bytesOf, createArtifact, download, sendForm, sha256 } from './fixtures.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli.js');
const MiB = 1024 * 1024;

/** The same database seen from another machine: its own (empty) data directory. */
function elsewhere(database: TestDatabase): TestDatabase {
  return { ...database, dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-node-')) };
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

// Contents over the inline limit, larger than one 1 MiB chunk: on PostgreSQL they are chunk
// rows every node reads; on SQLite files (the same API, for comparison).
describeEachDialect('Artifacts: large contents', (dialect) => {
  const server = useServer(dialect);

  it('serves every version and ranges across chunk boundaries byte for byte', async () => {
    const v1 = bytesOf(2 * MiB + 12_345);
    const v2 = bytesOf(MiB);
    const art = await createArtifact(server.api, { bytes: v1 });
    expect((await sendForm(server.api, { id: art.id, bytes: v2 })).status).toBe(200);
    const readers: TestServer[] = [server];
    if (dialect === 'postgres') readers.push(await startServer(dialect, { database: elsewhere(server.database), adminKey: server.adminKey }));
    try {
      for (const node of readers) {
        const whole1 = await download(node.api, `/api/v1/artifacts/${art.id}/download?version=1`);
        expect(whole1.status).toBe(200);
        expect(whole1.headers.get('content-length')).toBe(String(v1.length));
        expect(same(whole1.bytes, v1)).toBe(true);
        expect(same((await download(node.api, `/api/v1/artifacts/${art.id}/download`)).bytes, v2)).toBe(true);
        for (const [range, start, end] of [
          [`bytes=${MiB - 10}-${MiB + 9}`, MiB - 10, MiB + 9],
          [`bytes=${2 * MiB}-`, 2 * MiB, v1.length - 1],
          ['bytes=-100', v1.length - 100, v1.length - 1],
          ['bytes=0-0', 0, 0],
        ] as const) {
          const part = await download(node.api, `/api/v1/artifacts/${art.id}/download?version=1`, { range });
          expect(part.status, range).toBe(206);
          expect(part.headers.get('content-range')).toBe(`bytes ${start}-${end}/${v1.length}`);
          expect(same(part.bytes, v1.subarray(start, end + 1)), range).toBe(true);
        }
      }
    } finally {
      for (const node of readers.slice(1)) await node.close();
    }
  });

  it('stores one content once, and deletes it with the last version that references it', async () => {
    const bytes = bytesOf(MiB + 1);
    const sha = sha256(bytes);
    const before = await blobFiles(server);
    const a = await createArtifact(server.api, { bytes });
    const b = await createArtifact(server.api, { bytes });
    const stored = (await blobFiles(server)).filter((f) => !before.includes(f));
    expect(stored.length).toBe(1);
    expect(stored[0]).toContain(sha);
    expect((await server.api.delete(`/api/v1/artifacts/${a.id}`)).status).toBe(200);
    expect(same((await download(server.api, `/api/v1/artifacts/${b.id}/download`)).bytes, bytes)).toBe(true);
    expect((await server.api.delete(`/api/v1/artifacts/${b.id}`)).status).toBe(200);
    expect(await blobFiles(server)).toEqual(before);
  });

  it('refuses an upload over its declared size with 413 and a declared sha256 that does not match with 409, keeping nothing', async () => {
    const before = await blobFiles(server);
    const bytes = bytesOf(MiB + 100);
    const intent = await server.api.post('/api/v1/artifacts/upload-url', { name: 'big.bin', content_type: 'application/octet-stream', size_bytes: bytes.length, sha256: sha256('other') });
    expect(intent.status).toBe(201);
    const put = await fetch(intent.body.data.url, { method: 'PUT', body: bytes });
    expect(put.status).toBe(200);
    const confirmed = await server.api.post(`/api/v1/artifacts/upload-url/${intent.body.data.upload_id}/confirm`, {});
    expect(confirmed.status).toBe(409);
    expect(confirmed.body.error.details.map((d: { field: string }) => d.field)).toEqual(['sha256']);
    const small = await server.api.post('/api/v1/artifacts/upload-url', { name: 'small.bin', content_type: 'application/octet-stream', size_bytes: MiB });
    const over = await fetch(small.body.data.url, { method: 'PUT', body: bytes, headers: { 'content-type': 'application/octet-stream' } });
    expect(over.status).toBe(413);
    await waitFor(async () => JSON.stringify(await blobFiles(server)) === JSON.stringify(before), 5000, 50);
  });
});

describeEachDialect('Artifacts: chunked store leftovers and migration', (dialect) => {
  const database = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;

  it.skipIf(dialect !== 'postgres')('sweeps chunk sets of uploads that stopped an hour ago, not live ones', async () => {
    const server = await startServer(dialect, { database: database(), adminKey });
    try {
      const { db } = server.app.platform.database;
      const now = Date.now();
      for (const [id, touched] of [['crashed', now - 2 * 3600_000], ['live', now]] as const) {
        await db.insertInto('blob_staging').values({ blob_id: id, touched_at: touched }).execute();
        await db.insertInto('blob_chunks').values({ blob_id: id, seq: 0, bytes: Buffer.from('half an upload') }).execute();
      }
      await waitFor(async () => !(await blobFiles(server)).includes('tmp/crashed'), 5000, 50);
      expect(await blobFiles(server)).toEqual(['tmp/live']);
      await db.deleteFrom('blob_staging').execute();
      await db.deleteFrom('blob_chunks').execute();
    } finally {
      await server.close();
    }
  });

  it.skipIf(dialect !== 'postgres')('reads contents a single-node install kept as files until `switchboard blobs migrate` moves them in', async () => {
    const bytes = bytesOf(MiB + 7);
    const sha = sha256(bytes);
    const first = await startServer(dialect, { database: database(), adminKey });
    let id: string;
    try {
      id = (await createArtifact(first.api, { bytes })).id;
      // What an install from before this store has: the content as a file, not in the database.
      const { db } = first.app.platform.database;
      const blob = await db.selectFrom('blobs').select('blob_id').where('sha256', '=', sha).executeTakeFirstOrThrow();
      await db.deleteFrom('blobs').execute();
      await db.deleteFrom('blob_chunks').where('blob_id', '=', blob.blob_id).execute();
    } finally {
      await first.close();
    }
    const file = path.join(database().dataDir, 'blobs', 'sha256', sha.slice(0, 2), sha);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, bytes);
    // A corrupt file is reported and left alone.
    const corrupt = path.join(database().dataDir, 'blobs', 'sha256', 'aa', 'a'.repeat(64));
    fs.mkdirSync(path.dirname(corrupt), { recursive: true });
    fs.writeFileSync(corrupt, 'not what the name says');

    const second = await startServer(dialect, { database: database(), adminKey });
    try {
      expect(same((await download(second.api, `/api/v1/artifacts/${id}/download`)).bytes, bytes)).toBe(true);
      const env = { ...process.env, ...database().env, SWITCHBOARD_DATA_DIR: database().dataDir, SWITCHBOARD_LOG_LEVEL: 'silent' };
      const migrated = await run(process.execPath, [CLI, 'blobs', 'migrate'], { env });
      expect(JSON.parse(migrated.stdout)).toEqual({ moved: 1, present: 0, corrupt: ['a'.repeat(64)] });
      expect(fs.existsSync(file)).toBe(false);
      expect(fs.existsSync(corrupt)).toBe(true);
      const again = await run(process.execPath, [CLI, 'blobs', 'migrate'], { env });
      expect(JSON.parse(again.stdout)).toEqual({ moved: 0, present: 0, corrupt: ['a'.repeat(64)] });
      // Now any node reads it, with no file anywhere.
      const other = await startServer(dialect, { database: elsewhere(database()), adminKey });
      try {
        expect(same((await download(other.api, `/api/v1/artifacts/${id}/download`)).bytes, bytes)).toBe(true);
      } finally {
        await other.close();
      }
      expect(same((await download(second.api, `/api/v1/artifacts/${id}/download`)).bytes, bytes)).toBe(true);
    } finally {
      await second.close();
    }
  });

  it.skipIf(dialect === 'postgres')('refuses `blobs migrate` without DATABASE_URL', async () => {
    const env = { ...process.env, SWITCHBOARD_DATA_DIR: database().dataDir, DATABASE_URL: '' };
    await expect(run(process.execPath, [CLI, 'blobs', 'migrate'], { env })).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('set DATABASE_URL') });
  });
});
