import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { blobExists, blobFiles, bytesOf, createArtifact, download, sendForm, sha256 } from './fixtures.js';

describeEachDialect('Artifacts: blob reference counting', (dialect) => {
  const server = useServer(dialect);

  it('keeps a blob exactly while something references it, under concurrent creates, versions and deletes', async () => {
    const owner = await server.agent('churn');
    const bytes = bytesOf(20_000);
    const sha = sha256(bytes);
    let live: string[] = [];
    for (let round = 0; round < 8; round++) {
      const creates = Array.from({ length: 3 }, () => createArtifact(owner, { bytes }));
      const deletes = live.map((id) => owner.delete(`/api/v1/artifacts/${id}`));
      // A version with the same bytes on an artifact that is being deleted at the same time.
      const versions = live.slice(0, 1).map((id) => sendForm(owner, { id, bytes }));
      const [created] = await Promise.all([Promise.all(creates), Promise.all(deletes), Promise.all(versions)]);
      live = created.map((a) => a.id);
      expect(blobExists(server, sha), `round ${round}`).toBe(true);
      for (const id of live) {
        const got = await download(owner, `/api/v1/artifacts/${id}/download`);
        expect(Buffer.from(got.bytes).equals(Buffer.from(bytes))).toBe(true);
      }
    }
    await Promise.all(live.map((id) => owner.delete(`/api/v1/artifacts/${id}`)));
    expect(blobExists(server, sha)).toBe(false);
    expect((await owner.get('/api/v1/artifacts')).body.meta.total).toBe(0);
  });

  it('removes staging files a crash left behind, and only old ones', async () => {
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
    expect(blobFiles(server)).toEqual([]);
  });
});
