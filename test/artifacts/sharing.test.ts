import { expect, it } from 'vitest';
import type { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { createArtifact, download, sendForm } from './fixtures.js';

/** Every read path of one artifact, with the status each returned. */
async function readStatuses(client: Api, id: string): Promise<Record<string, number>> {
  return {
    get: (await client.get(`/api/v1/artifacts/${id}`)).status,
    download: (await download(client, `/api/v1/artifacts/${id}/download`)).status,
    versions: (await client.get(`/api/v1/artifacts/${id}/versions`)).status,
    access: (await client.get(`/api/v1/artifacts/${id}/access`)).status,
    signed_url: (await client.post(`/api/v1/artifacts/${id}/signed-url`, { expires_in: 60 })).status,
  };
}

async function writeStatuses(client: Api, id: string): Promise<Record<string, number>> {
  return {
    put: (await sendForm(client, { id, bytes: 'intruder' })).status,
    share: (await client.post(`/api/v1/artifacts/${id}/share`, { with_agents: ['x'] })).status,
    unshare: (await client.post(`/api/v1/artifacts/${id}/unshare`, { agents: ['x'] })).status,
    delete_version: (await client.delete(`/api/v1/artifacts/${id}/versions/1`)).status,
    delete: (await client.delete(`/api/v1/artifacts/${id}`)).status,
  };
}

const listed = async (client: Api, path: string) => (await client.get(path)).body.data.map((a: { id: string }) => a.id);

const all = (statuses: Record<string, number>, status: number) => Object.fromEntries(Object.keys(statuses).map((k) => [k, status]));

describeEachDialect('Artifacts: access and sharing', (dialect) => {
  const server = useServer(dialect);

  it('denies an unrelated agent every read path and hides the artifact from its lists', async () => {
    const owner = await server.agent('owner-1');
    const stranger = await server.agent('stranger-1');
    const art = await createArtifact(owner, { bytes: 'secret' });
    const reads = await readStatuses(stranger, art.id);
    expect(reads).toEqual(all(reads, 403));
    expect(await listed(stranger, '/api/v1/artifacts')).not.toContain(art.id);
    expect(await listed(stranger, '/api/v1/artifacts/shared')).not.toContain(art.id);
    const writes = await writeStatuses(stranger, art.id);
    expect(writes).toEqual(all(writes, 403));
    expect(await readStatuses(owner, art.id)).toEqual({ get: 200, download: 200, versions: 200, access: 200, signed_url: 201 });
    expect(await listed(owner, '/api/v1/artifacts')).toContain(art.id);
    expect(await listed(server.api, '/api/v1/artifacts?limit=500')).toContain(art.id);
  });

  it('shares with agents for reading only, and unshares', async () => {
    const owner = await server.agent('owner-2');
    const reader = await server.agent('reader-2');
    const art = await createArtifact(owner, { bytes: 'shared bytes' });
    const shared = await owner.post(`/api/v1/artifacts/${art.id}/share`, {
      with_agents: ['reader-2', 'reader-2', 'other-2'],
      with_groups: ['team-a'],
    });
    expect(shared.status).toBe(200);
    expect(shared.body.data).toEqual({ owner: 'owner-2', agents: ['other-2', 'reader-2'], groups: ['team-a'] });
    expect(await readStatuses(reader, art.id)).toEqual({ get: 200, download: 200, versions: 200, access: 200, signed_url: 201 });
    expect((await download(reader, `/api/v1/artifacts/${art.id}/download`)).text).toBe('shared bytes');
    expect(await listed(reader, '/api/v1/artifacts')).toEqual([art.id]);
    expect(await listed(reader, '/api/v1/artifacts/shared')).toEqual([art.id]);
    expect(await listed(owner, '/api/v1/artifacts/shared')).not.toContain(art.id);
    // Reading is not writing.
    const writes = await writeStatuses(reader, art.id);
    expect(writes).toEqual(all(writes, 403));

    const unshared = await owner.post(`/api/v1/artifacts/${art.id}/unshare`, { agents: ['reader-2'], groups: ['team-a'] });
    expect(unshared.body.data).toEqual({ owner: 'owner-2', agents: ['other-2'], groups: [] });
    const reads = await readStatuses(reader, art.id);
    expect(reads).toEqual(all(reads, 403));
    expect(await listed(reader, '/api/v1/artifacts/shared')).toEqual([]);
  });

  it('shares through access groups: members an admin granted read, others do not', async () => {
    const owner = await server.agent('owner-3');
    const member = await server.agent('member-3');
    const outsider = await server.agent('outsider-3');
    for (const [group, agent] of [
      ['analysts', 'member-3'],
      ['ops', 'member-3'],
      ['sales', 'outsider-3'],
    ]) {
      expect((await server.api.put(`/api/v1/auth/groups/${group}/members/${agent}`)).status).toBe(201);
    }
    const art = await createArtifact(owner, { bytes: 'for analysts', metadata: { kind: 'dataset' } });
    await owner.post(`/api/v1/artifacts/${art.id}/share`, { with_groups: ['analysts'] });

    expect(await readStatuses(member, art.id)).toEqual({ get: 200, download: 200, versions: 200, access: 200, signed_url: 201 });
    expect(await listed(member, '/api/v1/artifacts/shared')).toEqual([art.id]);
    expect(await listed(member, `/api/v1/artifacts?metadata=${encodeURIComponent('{"kind":"dataset"}')}`)).toEqual([art.id]);
    const denied = await readStatuses(outsider, art.id);
    expect(denied).toEqual(all(denied, 403));
    expect(await listed(outsider, '/api/v1/artifacts/shared')).toEqual([]);

    // Leaving the group (an admin removes the membership) ends the access.
    expect((await server.api.delete('/api/v1/auth/groups/analysts/members/member-3')).status).toBe(200);
    const after = await readStatuses(member, art.id);
    expect(after).toEqual(all(after, 403));
    expect(await listed(member, '/api/v1/artifacts/shared')).toEqual([]);
  });

  it('lets admins read and change anything, and inspect what is shared with an agent', async () => {
    const owner = await server.agent('owner-4');
    const art = await createArtifact(owner, { bytes: 'admin can see' });
    await owner.post(`/api/v1/artifacts/${art.id}/share`, { with_agents: ['viewer-4'] });
    expect((await server.api.get(`/api/v1/artifacts/${art.id}`)).status).toBe(200);
    expect(await listed(server.api, '/api/v1/artifacts/shared?agent_id=viewer-4')).toEqual([art.id]);
    expect((await server.api.get('/api/v1/artifacts/shared')).status).toBe(400);
    const stranger = await server.agent('stranger-4');
    expect((await stranger.get('/api/v1/artifacts/shared?agent_id=viewer-4')).status).toBe(403);
    expect((await sendForm(server.api, { id: art.id, bytes: 'by admin' })).body.data.version).toBe(2);
    expect((await server.api.delete(`/api/v1/artifacts/${art.id}`)).status).toBe(200);
  });

  it('validates share bodies and answers 404 for unknown artifacts', async () => {
    const owner = await server.agent('owner-5');
    const art = await createArtifact(owner, { bytes: 'x' });
    expect((await owner.post(`/api/v1/artifacts/${art.id}/share`, { with_agents: ['bad id!'] })).status).toBe(400);
    expect((await owner.post(`/api/v1/artifacts/${art.id}/share`, { agents: ['a'] })).status).toBe(400);
    expect((await owner.post(`/api/v1/artifacts/art_nope/share`, { with_agents: ['a'] })).status).toBe(404);
    expect((await owner.get(`/api/v1/artifacts/art_nope/access`)).status).toBe(404);
  });
});
