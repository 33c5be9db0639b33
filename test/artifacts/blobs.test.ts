import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
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

describeEachDialect('Artifacts: blob reference counting', (dialect) => {
  const server = useServer(dialect);

  // 20,000 bytes are kept in the database (under the 64 KiB inline limit), 100,000 in a file.
  it.each([
    { size: 20_000, inline: true },
    { size: 100_000, inline: false },
  ])(
    'keeps a content of $size bytes exactly while something references it, under concurrent creates, versions and deletes',
    async ({ size, inline }) => {
      const owner = await server.agent(`churn-${size}`);
      const bytes = bytesOf(size);
      const sha = sha256(bytes);
      let live: string[] = [];
      for (let round = 0; round < 8; round++) {
        const creates = Array.from({ length: 3 }, () => createArtifact(owner, { bytes }));
        const deletes = live.map((id) => owner.delete(`/api/v1/artifacts/${id}`));
        // A version with the same bytes on an artifact that is being deleted at the same time.
        const versions = live.slice(0, 1).map((id) => sendForm(owner, { id, bytes }));
        const [created] = await Promise.all([Promise.all(creates), Promise.all(deletes), Promise.all(versions)]);
        live = created.map((a) => a.id);
        expect(await storedContent(server, sha), `round ${round}`).toEqual({ inline, file: !inline });
        for (const id of live) {
          const got = await download(owner, `/api/v1/artifacts/${id}/download`);
          expect(Buffer.from(got.bytes).equals(Buffer.from(bytes))).toBe(true);
        }
      }
      await Promise.all(live.map((id) => owner.delete(`/api/v1/artifacts/${id}`)));
      expect(await contentExists(server, sha)).toBe(false);
      expect(await inlineContents(server)).toEqual([]);
      expect((await owner.get('/api/v1/artifacts')).body.meta.total).toBe(0);
    },
  );

  // Files are the SQLite store's; test/artifacts/chunked.test.ts has the PostgreSQL store's leftovers.
  it.skipIf(dialect === 'postgres')('removes staging files a crash left behind, and only old ones', async () => {
    const staging = path.join(server.database.dataDir, 'blobs', 'tmp');
    const stale = path.join(staging, 'crashed-upload');
    const recent = path.join(staging, 'live-upload');
    fs.writeFileSync(stale, 'half a file');
    fs.writeFileSync(recent, 'still being written');
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(stale, twoHoursAgo, twoHoursAgo);
    await waitFor(() => !fs.existsSync(stale), 5000);
    expect(fs.existsSync(recent)).toBe(true);
    fs.rmSync(recent);
    expect(await blobFiles(server)).toEqual([]);
  });
});

describeEachDialect('Artifacts: crash leftovers', (dialect) => {
  const database = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;

  it.skipIf(dialect === 'postgres')(
    'sweeps staging files at startup, and stored blobs nothing references once past the grace period',
    async () => {
      const first = await startServer(dialect, { database: database(), adminKey });
      const kept = bytesOf(100_000);
      let art: { id: string };
      try {
        art = await createArtifact(first.api, { bytes: kept });
      } finally {
        await first.close();
      }
      // What a killed server leaves: partial uploads (named by this version, with the pid of a
      // process that has ended, and by the versions before it), and blob files renamed into
      // place whose transaction never committed.
      const root = path.join(database().dataDir, 'blobs');
      const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
      const staging = [`${deadPid}-0a1b2c3d-00112233aabbccdd`, `${Date.now()}-00112233aabbccdd`].map((name) =>
        path.join(root, 'tmp', name),
      );
      for (const file of staging) fs.writeFileSync(file, 'half an upload');
      const blobPath = (bytes: Uint8Array) => path.join(root, 'sha256', sha256(bytes).slice(0, 2), sha256(bytes));
      const orphan = bytesOf(70_000);
      const young = bytesOf(70_000);
      const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
      for (const bytes of [orphan, young]) {
        fs.mkdirSync(path.dirname(blobPath(bytes)), { recursive: true });
        fs.writeFileSync(blobPath(bytes), bytes);
      }
      fs.utimesSync(blobPath(orphan), twoHoursAgo, twoHoursAgo);
      fs.utimesSync(blobPath(kept), twoHoursAgo, twoHoursAgo);

      const second = await startServer(dialect, { database: database(), adminKey });
      try {
        for (const file of staging) expect(fs.existsSync(file), file).toBe(false);
        await waitFor(() => !fs.existsSync(blobPath(orphan)), 5000);
        // Referenced, or too young to tell from an upload whose transaction is still open: kept.
        expect(fs.existsSync(blobPath(kept))).toBe(true);
        expect(fs.existsSync(blobPath(young))).toBe(true);
        const got = await download(second.api, `/api/v1/artifacts/${art.id}/download`);
        expect(Buffer.from(got.bytes).equals(Buffer.from(kept))).toBe(true);
        // Not the last request: a close right after a streamed download waits for that kept-alive
        // connection (a shutdown issue of its own).
        expect((await second.api.get(`/api/v1/artifacts/${art.id}`)).body.data.sha256).toBe(sha256(kept));
      } finally {
        await second.close();
      }
    },
  );
});
