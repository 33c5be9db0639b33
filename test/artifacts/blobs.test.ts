import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { blobFiles, bytesOf, contentExists, createArtifact, download, inlineContents, sendForm, sha256, storedContent } from './fixtures.js';

describeEachDialect('Artifacts: blob reference counting', (dialect) => {
  const server = useServer(dialect);

  // 20,000 bytes are kept in the database (under the 64 KiB inline limit), 100,000 in a file.
  it.each([
    { size: 20_000, inline: true },
    { size: 100_000, inline: false },
  ])('keeps a content of $size bytes exactly while something references it, under concurrent creates, versions and deletes', async ({ size, inline }) => {
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
