import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer, type TestServer } from '../helpers/server.js';
import {
  callFails,
  callOk,
  legacyClient,
  legacyHttp,
  modernClient,
  modernHttp,
  STATELESS_REVISION,
  statelessRequest,
  type AnyClient,
} from './fixtures.js';

/**
 * Issue 26: `/core/mcp` serves MCP 2025 (sessions, sdk 1) and 2026-07-28 (stateless, sdk 2) from
 * the same tools; each official client gets the revision it negotiates.
 */
async function createKey(server: TestServer, agentId: string): Promise<{ id: string; key: string }> {
  const res = await server.api.post('/api/v1/auth/keys', { agent_id: agentId, role: 'agent' });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.data.id as string, key: res.body.data.key as string };
}

/** A task created and read back through MCP: the key's agent is its creator. */
async function roundTrip(client: AnyClient, agentId: string): Promise<void> {
  const task = (await callOk(client, 'create_task', { title: `from ${client.revision}` })).structuredContent;
  expect(task).toMatchObject({ title: `from ${client.revision}`, created_by: agentId });
  expect((await callOk(client, 'get_task', { id: task.id })).structuredContent).toMatchObject({ id: task.id, created_by: agentId });
  expect(await callFails(client, 'get_task', { id: 'tsk_nope' })).toMatchObject({ code: 'not_found' });
}

describeEachDialect('MCP revisions', (dialect) => {
  const server = useServer(dialect);

  it('serves the same tools and instructions to a 2025 client (sdk 1) and a 2026-07-28 client (client 2)', async () => {
    const legacy = await legacyClient(legacyHttp(server.url, (await createKey(server, 'mcp-rev-legacy')).key));
    const modern = await modernClient(modernHttp(server.url, (await createKey(server, 'mcp-rev-modern')).key));
    try {
      expect(modern.negotiatedVersion()).toBe(STATELESS_REVISION);
      const [legacyTools, modernTools] = [await legacy.listTools(), await modern.listTools()];
      expect(legacyTools.length).toBeGreaterThan(10);
      expect(modernTools).toEqual(legacyTools);
      expect(modernTools.map((tool) => tool.name)).toEqual(
        expect.arrayContaining(['create_task', 'submit_step_input', 'request_step_input']),
      );
      expect(modern.getInstructions()).toContain('Switchboard');
      expect(modern.getInstructions()).toBe(legacy.getInstructions());
      await roundTrip(legacy, 'mcp-rev-legacy');
      await roundTrip(modern, 'mcp-rev-modern');
    } finally {
      await legacy.close();
      await modern.close();
    }
  });

  it('answers a stateless request without a session: no Mcp-Session-Id, any request first', async () => {
    const { key } = await createKey(server, 'mcp-rev-raw');
    const res = await statelessRequest(server, key, 'tools/list');
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const body = (await res.json()) as { result: { tools: { name: string }[] } };
    expect(body.result.tools.map((tool) => tool.name)).toContain('create_task');
  });

  it('answers malformed stateless requests with client errors, never a 500', async () => {
    const { key } = await createKey(server, 'mcp-rev-hostile');
    const post = (headers: Record<string, string>, body: unknown) =>
      fetch(`${server.url}/core/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${key}`,
          ...headers,
        },
        body: JSON.stringify(body),
      });
    const meta = (version: unknown) => ({
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientInfo': { name: 'x', version: '0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    });
    const cases: [Record<string, string>, unknown][] = [
      [
        { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
        { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta('2099-01-01') } },
      ],
      [{ 'mcp-method': 'tools/list' }, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta(STATELESS_REVISION) } }],
      [
        { 'mcp-protocol-version': STATELESS_REVISION, 'mcp-method': 'tools/list' },
        { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta(42) } },
      ],
      [
        { 'mcp-protocol-version': STATELESS_REVISION, 'mcp-method': 'tools/list' },
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      ],
      [
        { 'mcp-protocol-version': STATELESS_REVISION, 'mcp-method': 'tools/call', 'mcp-name': 'other' },
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_task', arguments: {}, _meta: meta(STATELESS_REVISION) } },
      ],
      [
        { 'mcp-protocol-version': STATELESS_REVISION, 'mcp-method': 'tools/call', 'mcp-name': 'nope' },
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'nope', _meta: meta(STATELESS_REVISION) } },
      ],
      [
        { 'mcp-protocol-version': STATELESS_REVISION },
        [{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta(STATELESS_REVISION) } }],
      ],
      [{}, 'just a string'],
    ];
    for (const [headers, body] of cases) {
      const res = await post(headers, body);
      expect(res.status, JSON.stringify(body)).toBeLessThan(500);
      const answer = (await res.json()) as { error?: unknown; result?: unknown };
      expect(answer.error, `${res.status} ${JSON.stringify(answer)}`).toBeDefined();
    }
  });

  it('refuses both revisions without a key (401) and with a revoked key (401)', async () => {
    expect((await statelessRequest(server, undefined, 'tools/list')).status).toBe(401);
    await expect(modernClient(modernHttp(server.url))).rejects.toThrow();
    await expect(legacyClient(legacyHttp(server.url))).rejects.toThrow();

    const { id, key } = await createKey(server, 'mcp-rev-revoked');
    const modern = await modernClient(modernHttp(server.url, key));
    try {
      expect((await modern.listTools()).length).toBeGreaterThan(0);
      expect((await server.api.delete(`/api/v1/auth/keys/${id}`)).status).toBe(200);
      expect((await statelessRequest(server, key, 'tools/list')).status).toBe(401);
      await expect(modern.listTools()).rejects.toThrow();
    } finally {
      await modern.close();
    }
  });
});
