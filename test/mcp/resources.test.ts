import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect, it } from 'vitest';
import { MAX_RESOURCE_BYTES, RECENT_RESOURCES } from '../../src/mcp/resources.js';
import { bytesOf, createArtifact } from '../artifacts/fixtures.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { mcpClient } from './fixtures.js';

/** A resources/read that must fail: its protocol error, whose message starts with the API's code. */
async function readFails(client: Client, uri: string): Promise<McpError> {
  const err = await client.readResource({ uri }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, uri).toBeInstanceOf(McpError);
  return err as McpError;
}

describeEachDialect('MCP resources', (dialect) => {
  const server = useServer(dialect);

  it('offers runs, plans, tasks and artifacts as URI templates', async () => {
    const client = await mcpClient(server, server.adminKey);
    try {
      expect(client.getServerCapabilities()?.resources).toBeDefined();
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
        'switchboard://artifacts/{id}',
        'switchboard://plans/{id}',
        'switchboard://runs/{id}',
        'switchboard://tasks/{id}',
      ]);
      for (const template of resourceTemplates) expect(template.title && template.description, template.uriTemplate).toBeTruthy();
    } finally {
      await client.close();
    }
  });

  it('lists the recent resources, bounded, and reads each as the HTTP API returns it', async () => {
    const owner = await server.agent('res-owner');
    const plan = (await server.api.post('/api/v1/coordination/plans', { alias: `res-plan-${dialect}`, steps: [{ id: 'gate', type: 'human_approval' }] })).body.data;
    const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.id })).body.data;
    const tasks = [];
    for (let i = 0; i <= RECENT_RESOURCES; i++) tasks.push((await server.api.post('/core/api/v1/tasks', { title: `res task ${i}` })).body.data);
    const text = await createArtifact(owner, { bytes: 'plain words', fileType: 'text/plain', filename: 'words.txt' });
    const binary = bytesOf(300);
    const blob = await createArtifact(owner, { bytes: binary, fileType: 'application/octet-stream', filename: 'data.bin' });
    const hidden = await createArtifact(await server.agent('res-other'), { bytes: 'not yours', fileType: 'text/plain' });

    const client = await mcpClient(server, owner.key!);
    try {
      const { resources } = await client.listResources();
      const uris = resources.map((r) => r.uri);
      const of = (kind: string) => resources.filter((r) => r.uri.startsWith(`switchboard://${kind}/`));
      expect(uris).toEqual(expect.arrayContaining([`switchboard://runs/${run.id}`, `switchboard://plans/${plan.id}`, `switchboard://tasks/${tasks.at(-1).id}`]));
      for (const kind of ['runs', 'plans', 'tasks', 'artifacts']) expect(of(kind).length, kind).toBeLessThanOrEqual(RECENT_RESOURCES);
      // The newest tasks, newest first: the first of the tasks made above is past the bound.
      expect(of('tasks')).toHaveLength(RECENT_RESOURCES);
      expect(of('tasks')[0]).toEqual({ uri: `switchboard://tasks/${tasks.at(-1).id}`, name: tasks.at(-1).title, mimeType: 'application/json' });
      expect(uris).not.toContain(`switchboard://tasks/${tasks[0].id}`);
      // Artifacts: only those the caller may read.
      expect(of('artifacts').map((r) => r.uri).sort()).toEqual([`switchboard://artifacts/${blob.id}`, `switchboard://artifacts/${text.id}`].sort());
      expect(of('artifacts')).toContainEqual({ uri: `switchboard://artifacts/${text.id}`, name: 'words.txt', mimeType: 'text/plain', size: 11 });

      for (const [uri, path] of [
        [`switchboard://runs/${run.id}`, `/api/v1/coordination/runs/${run.id}`],
        [`switchboard://plans/${plan.id}`, `/api/v1/coordination/plans/${plan.id}`],
        [`switchboard://tasks/${tasks[0].id}`, `/core/api/v1/tasks/${tasks[0].id}`],
      ]) {
        const { contents } = await client.readResource({ uri: uri! });
        expect(contents).toHaveLength(1);
        expect(contents[0]).toMatchObject({ uri, mimeType: 'application/json' });
        expect(JSON.parse((contents[0] as { text: string }).text)).toEqual((await server.api.get(path!)).body.data);
      }

      expect((await client.readResource({ uri: `switchboard://artifacts/${text.id}` })).contents).toEqual([
        { uri: `switchboard://artifacts/${text.id}`, mimeType: 'text/plain', text: 'plain words' },
      ]);
      const [binaryContent] = (await client.readResource({ uri: `switchboard://artifacts/${blob.id}` })).contents;
      expect(binaryContent).toMatchObject({ mimeType: 'application/octet-stream' });
      expect(Buffer.from((binaryContent as { blob: string }).blob, 'base64')).toEqual(Buffer.from(binary));

      // An artifact the caller may not read, and one that does not exist, are errors with the API's code.
      expect((await readFails(client, `switchboard://artifacts/${hidden.id}`)).message).toContain('forbidden');
      const missing = await readFails(client, 'switchboard://tasks/tsk_nope');
      expect(missing.code).toBe(-32002);
      expect(missing.message).toContain('not_found');
      expect((await readFails(client, 'switchboard://elsewhere/1')).code).toBe(-32002);
    } finally {
      await client.close();
    }

    // An admin reads every artifact.
    const admin = await mcpClient(server, server.adminKey);
    try {
      expect((await admin.readResource({ uri: `switchboard://artifacts/${hidden.id}` })).contents[0]).toMatchObject({ text: 'not yours' });
    } finally {
      await admin.close();
    }
  });

  it('refuses an artifact over the size bound with a clear error, and links it from read_artifact', async () => {
    const owner = await server.agent('res-big');
    const big = await createArtifact(owner, { bytes: bytesOf(MAX_RESOURCE_BYTES + 1), fileType: 'application/octet-stream' });
    const client = await mcpClient(server, owner.key!);
    try {
      const err = await readFails(client, `switchboard://artifacts/${big.id}`);
      expect(err.message).toContain('payload_too_large');
      expect(err.message).toContain(`${MAX_RESOURCE_BYTES + 1} bytes`);
      const read = (await client.callTool({ name: 'read_artifact', arguments: { artifact_id: big.id } })) as { structuredContent: Record<string, unknown>; content: unknown[] };
      expect(read.structuredContent).not.toHaveProperty('text');
      expect(read.content[1]).toMatchObject({ type: 'resource_link', uri: `switchboard://artifacts/${big.id}`, size: MAX_RESOURCE_BYTES + 1 });
    } finally {
      await client.close();
    }
  });
});
