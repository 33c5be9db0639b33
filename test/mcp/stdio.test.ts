import { StdioClientTransport as LegacyStdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StdioClientTransport as ModernStdio } from '@modelcontextprotocol/client/stdio';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer, type TestServer } from '../helpers/server.js';
import {
  callFails,
  callOk,
  decidingAgentKey,
  legacyClient,
  modernClient,
  STATELESS_REVISION,
  type AnyClient,
  type User,
} from './fixtures.js';

/**
 * Issue 26: `switchboard mcp` (stdio, proxying to /core/mcp) serves clients of both revisions,
 * the form of a human_input step included. Needs `npm run build`.
 */
type Connect = (server: TestServer, key: string, user?: User) => Promise<AnyClient>;
const cli = (server: TestServer, key: string) => ({
  command: process.execPath,
  args: ['dist/cli.js', 'mcp', '--url', server.url, '--key', key],
  stderr: 'inherit' as const,
});
const CLIENTS: [string, Connect][] = [
  ['2025 (sdk 1)', (server, key, user) => legacyClient(new LegacyStdio(cli(server, key)), user)],
  ['2026-07-28 (client 2)', (server, key, user) => modernClient(new ModernStdio(cli(server, key)), user)],
];

describeEachDialect('MCP over stdio', (dialect) => {
  const server = useServer(dialect);

  CLIENTS.forEach(([revision, connect], n) => {
    it(`${revision}: lists and calls the tools, and the user answers a human_input step`, async () => {
      const plan = await server.api.post('/api/v1/coordination/plans', {
        alias: `mcp-stdio-${n}`,
        steps: [
          {
            id: 'ask',
            type: 'human_input',
            prompt: 'Name?',
            schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          },
        ],
      });
      expect(plan.status, plan.text).toBe(201);
      const runId = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id })).body.data.id as string;
      const agentId = `mcp-stdio-${n}`;
      const client = await connect(server, await decidingAgentKey(server, agentId), () => ({ action: 'accept', content: { name: 'Ada' } }));
      try {
        if (client.revision === 'stateless') expect(client.negotiatedVersion()).toBe(STATELESS_REVISION);
        const tools = await client.listTools();
        expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['create_task', 'get_task', 'request_step_input']));
        const task = (await callOk(client, 'create_task', { title: `stdio ${revision}` })).structuredContent;
        expect(task).toMatchObject({ created_by: agentId });
        expect((await callOk(client, 'get_task', { id: task.id })).structuredContent).toMatchObject({ id: task.id });
        expect(await callFails(client, 'get_task', { id: 'tsk_nope' })).toMatchObject({ code: 'not_found' });
        const answered = await callOk(client, 'request_step_input', { run_id: runId });
        expect(answered.structuredContent).toMatchObject({ submitted: true, run: { id: runId, status: 'completed' } });
      } finally {
        await client.close();
      }
      const run = await server.api.get(`/api/v1/coordination/runs/${runId}`);
      expect(run.body.data).toMatchObject({ status: 'completed', steps: [expect.objectContaining({ output: { name: 'Ada' } })] });
    });
  });
});
