import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/index.js';
import { NotFound } from '../../src/kernel/errors.js';
import { createMcpServer, createStatelessMcpServer, type McpSurface } from '../../src/mcp/server.js';
import { STATELESS_REVISION } from './clients.js';

/**
 * The surface another module plugs in (issue 26): resources and instructions reach clients of
 * both revisions. The app serves no resources yet, so the two server factories are driven
 * directly (no storage involved): sdk 1 over an in-memory pair, client 2 through the sdk 2
 * handler's fetch.
 */
const principal: Principal = { role: 'agent', agentId: 'reader', keyId: 'key_1', actor: 'reader', bucket: 'reader' };
const logger = pino({ level: 'silent' });
const surface: McpSurface = {
  tools: [],
  instructions: 'Use the notes.',
  resources: [
    {
      uriTemplate: 'switchboard://notes/{id}',
      name: 'note',
      description: 'A note by id',
      async read(uri, caller) {
        const id = uri.split('/').pop()!;
        if (id === 'missing') throw new NotFound('Note', id);
        return { id, read_by: caller.actor };
      },
    },
    { uriTemplate: 'switchboard://readme', name: 'readme', mimeType: 'text/markdown', read: async () => '# Hello' },
  ],
};
const authInfo = { token: '', clientId: 'reader', scopes: [], extra: { principal } };

interface ResourceClient {
  listResources(): Promise<{ resources: unknown[] }>;
  listResourceTemplates(): Promise<{ resourceTemplates: unknown[] }>;
  readResource(params: { uri: string }): Promise<{ contents: unknown[] }>;
  getInstructions(): string | undefined;
  close(): Promise<void>;
}

async function legacy(): Promise<ResourceClient> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(surface, logger, () => principal).connect(serverSide);
  const client = new LegacyClient({ name: 't', version: '0' });
  await client.connect(clientSide);
  return client;
}

async function modern(): Promise<ResourceClient> {
  const handler = createMcpHandler(() => createStatelessMcpServer(surface, logger, (info) => info?.extra?.principal as Principal), { legacy: 'reject' });
  const client = new ModernClient({ name: 't', version: '0' }, { versionNegotiation: { mode: { pin: STATELESS_REVISION } } });
  await client.connect(new StreamableHTTPClientTransport(new URL('http://mcp.invalid/'), { fetch: (input, init) => handler.fetch(new Request(input, init), { authInfo }) }));
  return client;
}

describe('MCP server surface', () => {
  it.each([
    ['2025 (sdk 1)', legacy],
    ['2026-07-28 (client 2)', modern],
  ])('%s: lists and reads the resources, as the caller, and tells the instructions', async (_revision, connect) => {
    const client = await connect();
    try {
      expect(client.getInstructions()).toBe('Use the notes.');
      expect((await client.listResourceTemplates()).resourceTemplates).toEqual([
        expect.objectContaining({ uriTemplate: 'switchboard://notes/{id}', name: 'note', mimeType: 'application/json' }),
        expect.objectContaining({ uriTemplate: 'switchboard://readme', name: 'readme', mimeType: 'text/markdown' }),
      ]);
      expect((await client.listResources()).resources).toEqual([expect.objectContaining({ uri: 'switchboard://readme', name: 'readme' })]);
      const note = await client.readResource({ uri: 'switchboard://notes/n1' });
      expect(note.contents).toEqual([{ uri: 'switchboard://notes/n1', mimeType: 'application/json', text: JSON.stringify({ id: 'n1', read_by: 'reader' }, null, 2) }]);
      expect((await client.readResource({ uri: 'switchboard://readme' })).contents).toEqual([{ uri: 'switchboard://readme', mimeType: 'text/markdown', text: '# Hello' }]);
      // Not found: -32002 in 2025, -32602 with data { uri } in 2026-07-28.
      const notFound = { code: connect === legacy ? -32002 : -32602 };
      await expect(client.readResource({ uri: 'switchboard://notes/missing' })).rejects.toMatchObject({ ...notFound, data: { uri: 'switchboard://notes/missing' } });
      await expect(client.readResource({ uri: 'https://elsewhere/x' })).rejects.toMatchObject({ ...notFound, data: { uri: 'https://elsewhere/x' } });
    } finally {
      await client.close();
    }
  });
});
