import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { expect, it } from 'vitest';
import { acknowledge, receiveOne } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { activityOf } from '../tasks/fixtures.js';

const TOOLS = [
  'add_comment',
  'create_routine',
  'create_task',
  'delete_routine',
  'delete_task',
  'get_routine',
  'get_task',
  'list_projects',
  'list_routines',
  'list_tasks',
  'trigger_routine',
  'update_routine',
  'update_task',
];

interface Result {
  structuredContent?: Record<string, unknown>;
  content: unknown;
  isError?: boolean;
}

async function connect(transport: Transport): Promise<Client> {
  const client = new Client({ name: 'switchboard-test', version: '0' });
  await client.connect(transport);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Result> {
  return (await client.callTool({ name, arguments: args })) as Result;
}

/** Every tool once, through one client: the same checks over HTTP and stdio. */
async function exercise(server: TestServer, client: Client, agentId: string): Promise<void> {
  const { tools } = await client.listTools();
  expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
  for (const tool of tools) {
    expect(tool.inputSchema.type).toBe('object');
    expect(tool.description).toBeTruthy();
    expect(tool.annotations).toHaveProperty('readOnlyHint');
  }
  expect(tools.find((tool) => tool.name === 'create_routine')!.inputSchema.required).toEqual(['name', 'trigger_type', 'target_agent']);
  expect(tools.find((tool) => tool.name === 'delete_task')!.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });

  // Routines: a manual run reaches the agent, which completes it.
  const inbox = await server.agent(`${agentId}-worker`);
  const routine = (
    await call(client, 'create_routine', { name: 'nightly', trigger_type: 'cron', cron_expression: '0 3 * * *', target_agent: `${agentId}-worker` })
  ).structuredContent!;
  expect(routine).toMatchObject({ name: 'nightly', created_by: agentId });
  expect((await call(client, 'get_routine', { id: routine.id })).structuredContent).toMatchObject({ id: routine.id });
  const listed = (await call(client, 'list_routines', { trigger_type: 'cron' })).structuredContent!;
  expect(listed.items).toEqual(expect.arrayContaining([expect.objectContaining({ id: routine.id })]));
  expect((await call(client, 'update_routine', { id: routine.id, timezone: 'Europe/Paris' })).structuredContent).toMatchObject({ timezone: 'Europe/Paris' });
  const execution = (await call(client, 'trigger_routine', { id: routine.id, payload: { run: 1 } })).structuredContent!;
  expect(execution).toMatchObject({ routine_id: routine.id, trigger: 'manual', status: 'pending' });
  const message = await receiveOne(inbox, `${agentId}-worker`);
  await acknowledge(inbox, message.message_id, 'done by the agent');
  await waitFor(async () => (await server.api.get(`/core/api/v1/routines/executions/${execution.id}`)).body.data.status === 'success');

  // Tasks: the activity's actor is the key's agent.
  const task = (await call(client, 'create_task', { title: 'Ship MCP', priority: 'high' })).structuredContent!;
  expect(task).toMatchObject({ title: 'Ship MCP', status: 'todo' });
  expect((await call(client, 'get_task', { id: task.id })).structuredContent).toMatchObject({ id: task.id });
  expect((await call(client, 'update_task', { id: task.id, status: 'in_progress' })).structuredContent).toMatchObject({ status: 'in_progress' });
  expect((await call(client, 'add_comment', { id: task.id, content: 'on it' })).structuredContent).toMatchObject({ content: 'on it' });
  expect((await call(client, 'list_tasks', { status: 'in_progress' })).structuredContent!.items).toEqual(
    expect.arrayContaining([expect.objectContaining({ id: task.id })]),
  );
  expect((await call(client, 'list_projects', { limit: 10 })).structuredContent).toMatchObject({ items: [], total: 0 });
  expect(new Set((await activityOf(server.api, String(task.id))).map(([actor]) => actor))).toEqual(new Set([agentId]));

  // Domain errors are tool errors with the code, never protocol errors.
  const bad = await call(client, 'create_task', { title: 42 });
  expect(bad.isError).toBe(true);
  expect(bad.structuredContent).toMatchObject({ error: { code: 'invalid_request' } });
  expect(JSON.stringify(bad.content)).toContain('invalid_request');
  const unknownField = await call(client, 'update_routine', { id: routine.id, colour: 'red' });
  expect(unknownField.structuredContent).toMatchObject({ error: { code: 'invalid_request' } });
  const missing = await call(client, 'get_task', { id: 'tsk_nope' });
  expect(missing).toMatchObject({ isError: true, structuredContent: { error: { code: 'not_found' } } });

  expect((await call(client, 'delete_task', { id: task.id })).structuredContent).toEqual({ id: task.id, deleted: true });
  expect((await call(client, 'delete_routine', { id: routine.id })).structuredContent).toEqual({ id: routine.id, deleted: true });
  expect((await call(client, 'get_routine', { id: routine.id })).structuredContent).toMatchObject({ error: { code: 'not_found' } });
}

async function agentKey(server: TestServer, agentId: string): Promise<string> {
  const res = await server.api.post('/api/v1/auth/keys', { agent_id: agentId, role: 'agent' });
  return res.body.data.key as string;
}

function httpTransport(server: TestServer, key?: string): StreamableHTTPClientTransport {
  const headers: Record<string, string> = key ? { Authorization: `Bearer ${key}` } : {};
  return new StreamableHTTPClientTransport(new URL('/core/mcp', server.url), { requestInit: { headers } });
}

describeEachDialect('MCP', (dialect) => {
  const server = useServer(dialect);

  it('serves the 13 tools over Streamable HTTP with the key as actor', async () => {
    const client = await connect(httpTransport(server, await agentKey(server, 'mcp-http')));
    try {
      await exercise(server, client, 'mcp-http');
    } finally {
      await client.close();
    }
  });

  it('answers 401 without a key, and 404 for an unknown session', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const anonymous = await fetch(`${server.url}/core/mcp`, { method: 'POST', headers, body: JSON.stringify(initialize) });
    expect(anonymous.status).toBe(401);
    await expect(connect(httpTransport(server))).rejects.toThrow();
    const stale = await fetch(`${server.url}/core/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${server.adminKey}`, 'mcp-session-id': 'gone' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(stale.status).toBe(404);
  });

  it('keeps a session to the key that opened it', async () => {
    const transport = httpTransport(server, await agentKey(server, 'mcp-owner'));
    const client = await connect(transport);
    try {
      const other = await fetch(`${server.url}/core/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${await agentKey(server, 'mcp-intruder')}`,
          'mcp-session-id': transport.sessionId!,
          'mcp-protocol-version': transport.protocolVersion!,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
      expect(other.status).toBe(403);
    } finally {
      await client.close();
    }
  });

  it('serves the same tools over stdio through `switchboard mcp`', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['dist/cli.js', 'mcp', '--url', server.url, '--key', await agentKey(server, 'mcp-stdio')],
      stderr: 'inherit',
    });
    const client = await connect(transport);
    try {
      await exercise(server, client, 'mcp-stdio');
    } finally {
      await client.close();
    }
  });
});
