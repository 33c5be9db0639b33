import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { ChunkedBlobStore } from '../../src/artifacts/chunked-blob-store.js';
import { BlobChunksStore } from '../../src/artifacts/store.js';
import { openDatabase } from '../../src/db/database.js';
import { FakeClock } from '../helpers/clock.js';
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

/** A PUT whose body the test writes piece by piece (chunked), with its answer once it comes. */
function openPut(url: string) {
  const request = http.request(url, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
  });
  let answered = false;
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    request.on('response', (response) => {
      answered = true;
      let body = '';
      response.on('data', (d: Buffer) => (body += d.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    // A server that answers early ends the connection while the test may still be writing.
    request.on('error', (err) => (answered ? undefined : reject(err)));
  });
  return {
    answer,
    get answered() {
      return answered;
    },
    write: (bytes: Uint8Array) => new Promise<void>((resolve) => request.write(bytes, () => resolve())),
    end: (bytes: Uint8Array) => request.end(bytes),
  };
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
    if (dialect === 'postgres')
      readers.push(await startServer(dialect, { database: elsewhere(server.database), adminKey: server.adminKey }));
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
    const intent = await server.api.post('/api/v1/artifacts/upload-url', {
      name: 'big.bin',
      content_type: 'application/octet-stream',
      size_bytes: bytes.length,
      sha256: sha256('other'),
    });
    expect(intent.status).toBe(201);
    const put = await fetch(intent.body.data.url, { method: 'PUT', body: bytes });
    expect(put.status).toBe(200);
    const confirmed = await server.api.post(`/api/v1/artifacts/upload-url/${intent.body.data.upload_id}/confirm`, {});
    expect(confirmed.status).toBe(409);
    expect(confirmed.body.error.details.map((d: { field: string }) => d.field)).toEqual(['sha256']);
    const small = await server.api.post('/api/v1/artifacts/upload-url', {
      name: 'small.bin',
      content_type: 'application/octet-stream',
      size_bytes: MiB,
    });
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
      for (const [id, touched] of [
        ['crashed', now - 2 * 3600_000],
        ['live', now],
      ] as const) {
        await db.insertInto('blob_staging').values({ blob_id: id, touched_at: touched }).execute();
        await db
          .insertInto('blob_chunks')
          .values({ blob_id: id, seq: 0, bytes: Buffer.from('half an upload') })
          .execute();
      }
      // Both its staging row and its chunks (two statements: the row goes first).
      await waitFor(async () => !(await blobFiles(server)).some((f) => f.endsWith('/crashed')), 5000, 50);
      expect(await blobFiles(server)).toEqual(['tmp/live']);
      await db.deleteFrom('blob_staging').execute();
      await db.deleteFrom('blob_chunks').execute();
    } finally {
      await server.close();
    }
  });

  // A node killed mid-upload left its chunks for an hour (the untouched-staging rule). The
  // staging row names its node, and the sweep drops those of nodes the registry has down or gone.
  it.skipIf(dialect !== 'postgres')(
    'sweeps at start the staged chunks of nodes that are down or gone, not those of live nodes',
    async () => {
      await (await startServer(dialect, { database: database(), adminKey })).close();
      const handle = openDatabase(database().options());
      const { db } = handle;
      const now = Date.now();
      const node = (id: string, lastSeen: number, stopped: number | null) => ({
        id,
        version: 'test',
        host: 'test',
        pid: 1,
        started_at: lastSeen,
        last_seen_at: lastSeen,
        stopped_at: stopped,
      });
      try {
        await db
          .insertInto('cluster_nodes')
          .values([node('node_killed', now - 40_000, null), node('node_stopped', now, now), node('node_live', now, null)])
          .execute();
        for (const [blobId, nodeId] of [
          ['killed', 'node_killed'],
          ['stopped', 'node_stopped'],
          ['gone', 'node_gone'],
          ['live', 'node_live'],
          ['cli', null],
        ] as const) {
          await db.insertInto('blob_staging').values({ blob_id: blobId, node_id: nodeId, touched_at: now }).execute();
          await db
            .insertInto('blob_chunks')
            .values({ blob_id: blobId, seq: 0, bytes: Buffer.from('half an upload') })
            .execute();
        }
      } finally {
        await handle.close();
      }
      const server = await startServer(dialect, { database: database(), adminKey });
      try {
        await waitFor(async () => !(await blobFiles(server)).some((f) => /killed|stopped|gone/.test(f)), 5000, 50);
        expect(await blobFiles(server)).toEqual(['tmp/cli', 'tmp/live']);
        await server.app.platform.database.db.deleteFrom('blob_staging').execute();
        await server.app.platform.database.db.deleteFrom('blob_chunks').execute();
      } finally {
        await server.close();
      }
    },
  );

  // A node whose heartbeats turn 40 s old is down for the others, though it runs: a live node
  // sweeps the upload it is receiving, and the upload answers 409 (it used to go on, and name a
  // content whose first chunks were gone).
  it.skipIf(dialect !== 'postgres')(
    "answers 409 to an upload whose chunks were swept while it streamed, and leaves a live node's upload alone",
    async () => {
      const live = await startServer(dialect, { database: database(), adminKey });
      const lateClock = new FakeClock(Date.now());
      const late = await startServer(dialect, { database: database(), adminKey, clock: lateClock });
      const { db } = live.app.platform.database;
      /** Starts an upload to `node` and waits until its first chunk is stored; its staging entry. */
      const startUpload = async (node: TestServer, bytes: Uint8Array) => {
        const intent = await node.api.post('/api/v1/artifacts/upload-url', {
          name: 'big.bin',
          content_type: 'application/octet-stream',
          size_bytes: bytes.length,
        });
        expect(intent.status, intent.text).toBe(201);
        const before = await blobFiles(live);
        const put = openPut(intent.body.data.url);
        await put.write(bytes.subarray(0, MiB + 1000));
        const staging = await waitFor(async () => {
          const entry = (await blobFiles(live)).find((f) => f.startsWith('tmp/') && !before.includes(f));
          const chunk =
            entry && (await db.selectFrom('blob_chunks').select('seq').where('blob_id', '=', entry.slice(4)).executeTakeFirst());
          return chunk && entry;
        });
        return { put, staging, uploadId: intent.body.data.upload_id as string, rest: bytes.subarray(MiB + 1000) };
      };
      try {
        const kept = bytesOf(2 * MiB + 5);
        const keptUpload = await startUpload(live, kept);
        const sweptUpload = await startUpload(late, bytesOf(4 * MiB));

        // Its next heartbeat says 40 s ago: down for the live node, whose sweeper drops its upload.
        lateClock.set(Date.now() - 40_000);
        await waitFor(async () => !(await blobFiles(live)).includes(sweptUpload.staging), 15_000, 50);
        sweptUpload.put.end(sweptUpload.rest);
        const answer = await sweptUpload.put.answer;
        expect(answer.status, answer.body).toBe(409);
        expect(JSON.parse(answer.body).error.message).toMatch(/taken for down .* Upload it again/);
        // Nothing of it is left; the live node's upload is still staged.
        expect(await blobFiles(live)).toEqual([keptUpload.staging]);

        keptUpload.put.end(keptUpload.rest);
        expect((await keptUpload.put.answer).status).toBe(200);
        const confirmed = await live.api.post(`/api/v1/artifacts/upload-url/${keptUpload.uploadId}/confirm`);
        expect(confirmed.status, confirmed.text).toBe(201);
        expect(same((await download(live.api, `/api/v1/artifacts/${confirmed.body.data.id}/download`)).bytes, kept)).toBe(true);
      } finally {
        await late.close();
        await live.close();
      }
    },
    30_000,
  );

  // The window between an upload's last chunk and the commit that names it: a sweep there used
  // to leave a name whose chunks were gone (every download of it a 500).
  it.skipIf(dialect !== 'postgres')('refuses with 409 to commit a chunk set swept after its last chunk, and names nothing', async () => {
    const server = await startServer(dialect, { database: database(), adminKey });
    try {
      const { db, caps } = server.app.platform.database;
      const chunks = new BlobChunksStore(db, caps);
      const dying = new ChunkedBlobStore(chunks, null, { nodeId: 'node_dying', liveNodeIds: async () => [], leads: async () => false });
      const other = new ChunkedBlobStore(chunks, null, {
        nodeId: 'node_other',
        liveNodeIds: async () => ['node_other'],
        leads: async () => true,
      });
      // Up for the server's own sweeper (its registry row is fresh), down for `other`'s.
      const now = Date.now();
      await db
        .insertInto('cluster_nodes')
        .values({ id: 'node_dying', version: 'test', host: 'test', pid: 1, started_at: now, last_seen_at: now, stopped_at: null })
        .execute();
      const before = await blobFiles(server);
      const staged = await dying.stage(Readable.from([bytesOf(MiB + 10)]), 2 * MiB);
      await other.sweepStaging(3600_000);
      expect(await blobFiles(server)).toEqual(before);
      const refused = await chunks.inTransaction((tx) => staged.commit(tx)).catch((err: unknown) => err);
      expect(refused).toMatchObject({ status: 409, message: expect.stringMatching(/Upload it again/) });
      expect(await blobFiles(server)).toEqual(before);
    } finally {
      await server.close();
    }
  });

  it.skipIf(dialect !== 'postgres')(
    'reads contents a single-node install kept as files until `switchboard blobs migrate` moves them in',
    async () => {
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
    },
  );

  it.skipIf(dialect === 'postgres')('refuses `blobs migrate` without DATABASE_URL', async () => {
    const env = { ...process.env, SWITCHBOARD_DATA_DIR: database().dataDir, DATABASE_URL: '' };
    await expect(run(process.execPath, [CLI, 'blobs', 'migrate'], { env })).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('set DATABASE_URL'),
    });
  });
});
