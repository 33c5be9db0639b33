import { afterEach, expect, it } from 'vitest';
import type { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { mcpClient } from '../mcp/fixtures.js';
import { openStream, type OpenStream } from '../events/sse.js';
import { download, sendForm } from './fixtures.js';

describeEachDialect('Artifacts: group shares open to the members an admin granted', (dialect) => {
  const server = useServer(dialect);
  const streams: OpenStream[] = [];
  afterEach(() => streams.splice(0).forEach((s) => s.close()));

  /**
   * What agent `client` can read of the artifact: its download, its events (listed, and replayed
   * by a stream from the log's start) and MCP's read_artifact. `round` numbers the calls: the
   * probe's next version event, which every reader reads, marks where the stream has caught up.
   */
  async function reads(client: Api, id: string, round: number): Promise<Record<string, unknown>> {
    const stream = await openStream(server.url, client.key!, { query: 'type=artifact.*', lastEventId: 'evt_0000000000000' });
    streams.push(stream);
    expect((await sendForm(server.api, { id: probe, bytes: `probe ${round}` })).status).toBe(200);
    const caughtUp = () => stream.events.some((e) => e.subject === probe && e.data.version === round + 1);
    while (!caughtUp()) await stream.until(stream.events.length + 1);
    const mcp = await mcpClient(server, client.key!);
    try {
      const result = (await mcp.callTool({ name: 'read_artifact', arguments: { artifact_id: id } })) as {
        isError?: boolean;
        structuredContent?: { text?: string };
      };
      return {
        download: (await download(client, `/api/v1/artifacts/${id}/download`)).status,
        events: (await client.get(`/api/v1/events?subject=${id}`)).body.data.map((e: { type: string }) => e.type),
        stream: stream.events.filter((e) => e.subject === id).map((e) => e.type),
        mcp: result.isError ? 'error' : result.structuredContent?.text,
      };
    } finally {
      await mcp.close();
    }
  }

  let probe = '';

  it('a group an agent declares on its capabilities opens nothing; an admin grant does, until it is removed', async () => {
    const owner = await server.agent('ag-owner');
    const intruder = await server.agent('ag-intruder');
    // A probe artifact every reader below may read: its events mark where a stream has caught up to.
    probe = (await server.api.post('/api/v1/artifacts/snippets', { name: 'probe.json', content: 0 })).body.data.id;
    for (const agent of ['ag-owner', 'ag-intruder']) await server.api.post(`/api/v1/artifacts/${probe}/share`, { with_agents: [agent] });

    const art = (await owner.post('/api/v1/artifacts/snippets', { name: 'ledger.json', content: 'q3 numbers' })).body.data;
    expect((await owner.post(`/api/v1/artifacts/${art.id}/share`, { with_groups: ['finance'] })).status).toBe(200);
    expect((await sendForm(owner, { id: art.id, bytes: '"q3 numbers, revised"', content_type: 'application/json' })).status).toBe(200);
    const denied = { download: 403, events: [], stream: [], mcp: 'error' };
    expect(await reads(intruder, art.id, 1)).toEqual(denied);

    // The attack: the intruder declares the group on a capability of its own (201), then tries again.
    const declared = await intruder.post('/api/v1/discovery/capabilities', { capability: 'x', groups: ['finance'] });
    expect(declared.status).toBe(201);
    expect(await reads(intruder, art.id, 2)).toEqual(denied);
    expect((await intruder.get('/api/v1/artifacts/shared')).body.data).toEqual([expect.objectContaining({ id: probe })]);

    // An admin grants the membership: every read path opens.
    expect((await server.api.put('/api/v1/auth/groups/finance/members/ag-intruder')).status).toBe(201);
    expect(await reads(intruder, art.id, 3)).toEqual({
      download: 200,
      events: ['artifact.version_created'],
      stream: ['artifact.version_created'],
      mcp: '"q3 numbers, revised"',
    });
    expect((await intruder.get('/api/v1/artifacts/shared')).body.data.map((a: { id: string }) => a.id).sort()).toEqual(
      [art.id, probe].sort(),
    );

    // Removed again: closed again.
    expect((await server.api.delete('/api/v1/auth/groups/finance/members/ag-intruder')).status).toBe(200);
    expect(await reads(intruder, art.id, 4)).toEqual(denied);
  });

  it('grants, lists and removes memberships: admins only, idempotent grants, 404 for a missing one', async () => {
    const agent = await server.agent('ag-member');
    const grant = await server.api.put('/api/v1/auth/groups/legal/members/ag-member');
    expect(grant.status).toBe(201);
    expect(grant.body.data).toEqual({
      group: 'legal',
      agent_id: 'ag-member',
      granted_by: expect.any(String),
      granted_at: expect.any(String),
    });
    const again = await server.api.put('/api/v1/auth/groups/legal/members/ag-member');
    expect([again.status, again.body.data]).toEqual([200, grant.body.data]);
    expect((await server.api.put('/api/v1/auth/groups/legal/members/ag-other')).status).toBe(201);
    expect((await server.api.put('/api/v1/auth/groups/audit/members/ag-member')).status).toBe(201);

    const groups = await server.api.get('/api/v1/auth/groups?limit=500');
    expect(groups.status).toBe(200);
    expect(groups.body.data.filter((g: { group: string }) => ['audit', 'legal'].includes(g.group))).toEqual([
      { group: 'audit', members: ['ag-member'] },
      { group: 'legal', members: ['ag-member', 'ag-other'] },
    ]);
    const members = await server.api.get('/api/v1/auth/groups/legal/members?limit=1');
    expect([members.status, members.body.data.map((m: { agent_id: string }) => m.agent_id), members.body.meta.total]).toEqual([
      200,
      ['ag-member'],
      2,
    ]);
    expect((await server.api.get('/api/v1/auth/groups/nobody-here/members')).status).toBe(404);

    expect((await server.api.delete('/api/v1/auth/groups/legal/members/ag-member')).body.data).toEqual({
      group: 'legal',
      agent_id: 'ag-member',
      deleted: true,
    });
    expect((await server.api.delete('/api/v1/auth/groups/legal/members/ag-member')).status).toBe(404);

    // Agents cannot grant themselves (or anyone) a membership, nor read who is in a group.
    for (const [method, path] of [
      ['PUT', '/api/v1/auth/groups/legal/members/ag-member'],
      ['DELETE', '/api/v1/auth/groups/legal/members/ag-other'],
      ['GET', '/api/v1/auth/groups'],
      ['GET', '/api/v1/auth/groups/legal/members'],
    ] as const) {
      expect((await agent.request(method, path)).status, `${method} ${path}`).toBe(403);
    }
    expect((await server.api.get('/api/v1/auth/groups/legal/members')).body.data.map((m: { agent_id: string }) => m.agent_id)).toEqual([
      'ag-other',
    ]);
    expect((await server.api.put('/api/v1/auth/groups/bad%20name/members/ag-member')).status).toBe(400);
    expect((await server.api.put('/api/v1/auth/groups/legal/members/bad%20id!')).status).toBe(400);
  });
});
