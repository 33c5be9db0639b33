import { expect, it } from 'vitest';
import { MAX_RESOURCE_BYTES, RECENT_RESOURCES } from '../../src/mcp/resources.js';
import { bytesOf, createArtifact } from '../artifacts/fixtures.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { HTTP_CLIENTS, type AnyClient } from './fixtures.js';

interface ProtocolError {
  code: number;
  message: string;
  data?: { code?: string; uri?: string };
}

/** A resources/read that must fail: its protocol error, whose message has the API's code, which its data carries too. */
async function readFails(client: AnyClient, uri: string): Promise<ProtocolError> {
  const err = await client.readResource(uri).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, uri).toMatchObject({ code: expect.any(Number), message: expect.any(String), data: { uri } });
  return err as ProtocolError;
}

/** A resource not found: -32002 in MCP 2025, invalid params in 2026-07-28. */
const NOT_FOUND = { legacy: -32002, stateless: -32602 };

describeEachDialect('MCP resources', (dialect) => {
  const server = useServer(dialect);

  HTTP_CLIENTS.forEach(([revision, connect], n) => {
    it(`${revision}: offers runs, plans, tasks and artifacts as URI templates`, async () => {
      const client = await connect(server, server.adminKey);
      try {
        const resourceTemplates = await client.listResourceTemplates();
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

    it(`${revision}: lists the recent resources, bounded, and reads each as the HTTP API returns it`, async () => {
      const owner = await server.agent(`res-owner-${n}`);
      const plan = (
        await server.api.post('/api/v1/coordination/plans', {
          alias: `res-plan-${dialect}-${n}`,
          steps: [{ id: 'gate', type: 'human_approval' }],
        })
      ).body.data;
      const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.id })).body.data;
      const tasks = [];
      for (let i = 0; i <= RECENT_RESOURCES; i++)
        tasks.push((await server.api.post('/core/api/v1/tasks', { title: `res task ${i}` })).body.data);
      const text = await createArtifact(owner, { bytes: 'plain words', fileType: 'text/plain', filename: 'words.txt' });
      const binary = bytesOf(300);
      const blob = await createArtifact(owner, { bytes: binary, fileType: 'application/octet-stream', filename: 'data.bin' });
      const hidden = await createArtifact(await server.agent(`res-other-${n}`), { bytes: 'not yours', fileType: 'text/plain' });

      const client = await connect(server, owner.key!);
      try {
        const resources = await client.listResources();
        const uris = resources.map((r) => r.uri);
        const of = (kind: string) => resources.filter((r) => r.uri.startsWith(`switchboard://${kind}/`));
        expect(uris).toEqual(
          expect.arrayContaining([
            `switchboard://runs/${run.id}`,
            `switchboard://plans/${plan.id}`,
            `switchboard://tasks/${tasks.at(-1).id}`,
          ]),
        );
        for (const kind of ['runs', 'plans', 'tasks', 'artifacts']) expect(of(kind).length, kind).toBeLessThanOrEqual(RECENT_RESOURCES);
        // The newest tasks, newest first: the first of the tasks made above is past the bound.
        expect(of('tasks')).toHaveLength(RECENT_RESOURCES);
        expect(of('tasks')[0]).toEqual({
          uri: `switchboard://tasks/${tasks.at(-1).id}`,
          name: tasks.at(-1).title,
          mimeType: 'application/json',
        });
        expect(uris).not.toContain(`switchboard://tasks/${tasks[0].id}`);
        // Artifacts: only those the caller may read.
        expect(
          of('artifacts')
            .map((r) => r.uri)
            .sort(),
        ).toEqual([`switchboard://artifacts/${blob.id}`, `switchboard://artifacts/${text.id}`].sort());
        expect(of('artifacts')).toContainEqual({
          uri: `switchboard://artifacts/${text.id}`,
          name: 'words.txt',
          mimeType: 'text/plain',
          size: 11,
        });

        for (const [uri, path] of [
          [`switchboard://runs/${run.id}`, `/api/v1/coordination/runs/${run.id}`],
          [`switchboard://plans/${plan.id}`, `/api/v1/coordination/plans/${plan.id}`],
          [`switchboard://tasks/${tasks[0].id}`, `/core/api/v1/tasks/${tasks[0].id}`],
        ]) {
          const contents = await client.readResource(uri!);
          expect(contents).toHaveLength(1);
          expect(contents[0]).toMatchObject({ uri, mimeType: 'application/json' });
          expect(JSON.parse((contents[0] as { text: string }).text)).toEqual((await server.api.get(path!)).body.data);
        }

        expect(await client.readResource(`switchboard://artifacts/${text.id}`)).toEqual([
          { uri: `switchboard://artifacts/${text.id}`, mimeType: 'text/plain', text: 'plain words' },
        ]);
        const [binaryContent] = await client.readResource(`switchboard://artifacts/${blob.id}`);
        expect(binaryContent).toMatchObject({ mimeType: 'application/octet-stream' });
        expect(Buffer.from((binaryContent as { blob: string }).blob, 'base64')).toEqual(Buffer.from(binary));

        // An artifact the caller may not read, and one that does not exist, are errors with the API's code.
        const forbidden = await readFails(client, `switchboard://artifacts/${hidden.id}`);
        expect(forbidden).toMatchObject({ code: -32602, message: expect.stringContaining('forbidden'), data: { code: 'forbidden' } });
        const missing = await readFails(client, 'switchboard://tasks/tsk_nope');
        expect(missing).toMatchObject({
          code: NOT_FOUND[client.revision],
          message: expect.stringContaining('not_found'),
          data: { code: 'not_found' },
        });
        expect((await readFails(client, 'switchboard://elsewhere/1')).code).toBe(NOT_FOUND[client.revision]);
      } finally {
        await client.close();
      }

      // An admin reads every artifact.
      const admin = await connect(server, server.adminKey);
      try {
        expect((await admin.readResource(`switchboard://artifacts/${hidden.id}`))[0]).toMatchObject({ text: 'not yours' });
      } finally {
        await admin.close();
      }
    });

    it(`${revision}: refuses an artifact over the size bound with a clear error, and links it from read_artifact`, async () => {
      const owner = await server.agent(`res-big-${n}`);
      const big = await createArtifact(owner, { bytes: bytesOf(MAX_RESOURCE_BYTES + 1), fileType: 'application/octet-stream' });
      const client = await connect(server, owner.key!);
      try {
        const err = await readFails(client, `switchboard://artifacts/${big.id}`);
        expect(err.message).toContain('payload_too_large');
        expect(err.message).toContain(`${MAX_RESOURCE_BYTES + 1} bytes`);
        const read = (await client.callTool({ name: 'read_artifact', arguments: { artifact_id: big.id } })) as {
          structuredContent: Record<string, unknown>;
          content: unknown[];
        };
        expect(read.structuredContent).not.toHaveProperty('text');
        expect(read.content[1]).toMatchObject({
          type: 'resource_link',
          uri: `switchboard://artifacts/${big.id}`,
          size: MAX_RESOURCE_BYTES + 1,
        });
      } finally {
        await client.close();
      }
    });
  });
});
