import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { expect, it } from 'vitest';
import { acknowledge, receiveOne } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { activityOf } from '../tasks/fixtures.js';
import { SPEC_TOOLS } from './fixtures.js';

/** The spec's tools and the approval and input tools beside them. */
const TOOLS = [...SPEC_TOOLS, 'approve_step', 'list_pending_approvals', 'request_step_input', 'submit_step_input'].sort();

const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const CREATE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
const UPDATE = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const DELETE = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };
const DECIDE = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false };
const DISPATCH = { ...CREATE, openWorldHint: true };
const ANNOTATIONS: Record<string, typeof READ> = {
  add_comment: CREATE,
  approve_step: DECIDE,
  list_pending_approvals: READ,
  submit_step_input: DECIDE,
  request_step_input: DECIDE,
  create_routine: CREATE,
  create_task: CREATE,
  delete_routine: DELETE,
  delete_task: DELETE,
  get_routine: READ,
  get_task: READ,
  list_projects: READ,
  list_routines: READ,
  list_tasks: READ,
  trigger_routine: DISPATCH,
  update_routine: UPDATE,
  update_task: UPDATE,
};

interface Result {
  structuredContent?: Record<string, unknown>;
  content: { type: string; text?: string }[];
  isError?: boolean;
}

async function connect(transport: Transport): Promise<Client> {
  const client = new Client({ name: 'switchboard-test', version: '0' });
  await client.connect(transport);
  return client;
}

/**
 * Calls a tool; a success is structuredContent (checked against the tool's outputSchema by the
 * client) plus its JSON text rendering, a tool error the JSON text of `{error}` alone.
 */
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Result> {
  const result = (await client.callTool({ name, arguments: args })) as Result;
  expect(result.content).toHaveLength(1);
  expect(result.content[0]!.type).toBe('text');
  if (result.isError) {
    expect(result.structuredContent).toBeUndefined();
    return { ...result, structuredContent: JSON.parse(result.content[0]!.text!) as Record<string, unknown> };
  }
  expect(result.structuredContent).toBeTypeOf('object');
  expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
  return result;
}

async function expectToolError(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<void> {
  const result = await call(client, name, args);
  expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
  expect(result.structuredContent, `${name} ${JSON.stringify(args)}`).toMatchObject({ error: { code, message: expect.any(String) } });
  expect(result.content[0]!.text).toContain(code);
}

/** Every tool once, through one client: the same checks over HTTP and stdio. */
async function exercise(server: TestServer, client: Client, agentId: string): Promise<void> {
  // initialize: the server names itself and offers tools.
  expect(client.getServerVersion()).toMatchObject({ name: 'switchboard', version: expect.any(String) });
  expect(client.getServerCapabilities()?.tools).toBeDefined();

  // tools/list: these tools (among the others of tools.test.ts), each with a description, annotations and a closed input schema.
  const { tools: allTools } = await client.listTools();
  const tools = allTools.filter((tool) => TOOLS.includes(tool.name));
  expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
  for (const tool of tools) {
    expect(tool.description, tool.name).toBeTruthy();
    expect(tool.annotations, tool.name).toEqual(ANNOTATIONS[tool.name]);
    expect(tool.inputSchema.type, tool.name).toBe('object');
    expect(tool.inputSchema.additionalProperties, tool.name).toBe(false);
    expect(Object.keys(tool.inputSchema.properties ?? {}).length, tool.name).toBeGreaterThan(0);
    for (const [argument, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
      expect((schema as { description?: string }).description, `${tool.name}.${argument}`).toBeTruthy();
    }
  }
  const required = Object.fromEntries(tools.map((tool) => [tool.name, tool.inputSchema.required ?? []]));
  expect(required).toMatchObject({
    create_routine: ['name', 'trigger_type', 'target_agent'],
    get_routine: ['id'],
    update_routine: ['id'],
    delete_routine: ['id'],
    trigger_routine: ['id'],
    create_task: ['title'],
    get_task: ['id'],
    update_task: ['id'],
    delete_task: ['id'],
    add_comment: ['id', 'content'],
    list_routines: [],
    list_tasks: [],
    list_projects: [],
    list_pending_approvals: [],
    approve_step: ['run_id', 'step_id', 'approved'],
    submit_step_input: ['run_id', 'step_id', 'data'],
    request_step_input: [],
  });

  // Routines: a run triggered through MCP reaches the agent, which completes it.
  const worker = `${agentId}-worker`;
  const inbox = await server.agent(worker);
  const routine = (
    await call(client, 'create_routine', { name: 'nightly', trigger_type: 'cron', cron_expression: '0 3 * * *', target_agent: worker })
  ).structuredContent!;
  expect(routine).toMatchObject({ name: 'nightly', created_by: agentId, target_agent: worker });
  expect((await call(client, 'get_routine', { id: routine.id })).structuredContent).toMatchObject({ id: routine.id });
  const listed = (await call(client, 'list_routines', { trigger_type: 'cron', enabled: true })).structuredContent!;
  expect(listed.items).toEqual(expect.arrayContaining([expect.objectContaining({ id: routine.id })]));
  expect((await call(client, 'update_routine', { id: routine.id, timezone: 'Europe/Paris' })).structuredContent).toMatchObject({
    timezone: 'Europe/Paris',
  });
  const execution = (await call(client, 'trigger_routine', { id: routine.id, payload: { run: 1 } })).structuredContent!;
  expect(execution).toMatchObject({ routine_id: routine.id, trigger: 'manual' });
  const message = await receiveOne(inbox, worker);
  expect(message).toMatchObject({
    event_name: 'routine.execute',
    payload: { routine_id: routine.id, execution_id: execution.id, trigger: 'manual', payload: { run: 1 } },
  });
  await acknowledge(inbox, message.message_id, 'done by the agent');
  const completed = await waitFor(async () => {
    const res = await server.api.get(`/core/api/v1/routines/executions/${String(execution.id)}`);
    return res.body.data.status === 'success' ? res.body.data : undefined;
  });
  expect(completed).toMatchObject({ id: execution.id, output: 'done by the agent' });

  // Tasks in a project: every activity entry and the comment name the key's agent.
  const project = await server.api.post('/core/api/v1/projects', { name: `${agentId} project` });
  expect(project.status, project.text).toBe(201);
  const projectId = project.body.data.id as string;
  const task = (await call(client, 'create_task', { title: 'Ship MCP', priority: 'high', project_id: projectId })).structuredContent!;
  expect(task).toMatchObject({ title: 'Ship MCP', status: 'todo', project_id: projectId, created_by: agentId });
  expect((await call(client, 'get_task', { id: task.id })).structuredContent).toMatchObject({ id: task.id });
  expect((await call(client, 'update_task', { id: task.id, status: 'in_progress', assigned_to: worker })).structuredContent).toMatchObject({
    status: 'in_progress',
    assigned_to: worker,
  });
  expect((await call(client, 'add_comment', { id: task.id, content: 'on it' })).structuredContent).toMatchObject({
    task_id: task.id,
    content: 'on it',
    author: agentId,
  });
  expect((await call(client, 'list_tasks', { project_id: projectId, status: 'in_progress' })).structuredContent).toMatchObject({
    items: [expect.objectContaining({ id: task.id })],
    total: 1,
  });
  expect((await call(client, 'list_projects', { limit: 500 })).structuredContent!.items).toEqual(
    expect.arrayContaining([expect.objectContaining({ id: projectId })]),
  );
  const activity = await activityOf(server.api, String(task.id));
  expect(activity.length).toBeGreaterThanOrEqual(3);
  expect(new Set(activity.map(([actor]) => actor))).toEqual(new Set([agentId]));

  // Approvals: the waiting human steps across runs. An agent decides only a step that names it
  // among its approvers; answering a human_input is for people (approvals:decide).
  const plan = await server.api.post('/api/v1/coordination/plans', {
    alias: `${agentId}-gated`,
    steps: [
      { id: 'gate', type: 'human_approval', prompt: 'Release {{input.version}}?', approvers: [`agent:${agentId}`] },
      { id: 'notes', type: 'human_input', prompt: 'Release notes?', depends_on: ['gate'], schema: { type: 'object', required: ['text'] } },
    ],
  });
  expect(plan.status, plan.text).toBe(201);
  const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: { version: '1.2' } })).body.data;
  const pendingOfRun = async () =>
    ((await call(client, 'list_pending_approvals', { limit: 500 })).structuredContent!.items as { run_id: string }[]).filter(
      (p) => p.run_id === run.id,
    );
  expect(await pendingOfRun()).toEqual([
    expect.objectContaining({
      step_id: 'gate',
      type: 'human_approval',
      prompt: 'Release 1.2?',
      approvers: [`agent:${agentId}`],
      run_input: { version: '1.2' },
    }),
  ]);
  expect(
    (await call(client, 'approve_step', { run_id: run.id, step_id: 'gate', approved: true, comment: 'ship' })).structuredContent,
  ).toMatchObject({ id: run.id });
  expect(await pendingOfRun()).toEqual([
    expect.objectContaining({ step_id: 'notes', type: 'human_input', schema: { type: 'object', required: ['text'] } }),
  ]);
  await expectToolError(client, 'approve_step', { run_id: run.id, step_id: 'gate', approved: true }, 'conflict');
  await expectToolError(client, 'submit_step_input', { run_id: run.id, step_id: 'notes', data: { text: 'fixes' } }, 'forbidden');
  expect(
    (await server.api.post(`/api/v1/coordination/runs/${run.id}/steps/notes/input`, { data: { text: 'fixes' } })).body.data,
  ).toMatchObject({ status: 'completed' });
  expect(await pendingOfRun()).toEqual([]);
  const open = await server.api.post('/api/v1/coordination/plans', {
    alias: `${agentId}-open-gate`,
    steps: [{ id: 'gate', type: 'human_approval' }],
  });
  const openRun = (await server.api.post('/api/v1/coordination/runs', { plan_id: open.body.data.id })).body.data;
  await expectToolError(client, 'approve_step', { run_id: openRun.id, step_id: 'gate', approved: true }, 'forbidden');
  const [decided] = (await server.api.get(`/api/v1/events?type=approval.decided&subject=${run.id}`)).body.data;
  expect(decided).toMatchObject({ actor: agentId, data: { decided_by: agentId, comment: 'ship' } });

  // Domain errors are tool errors with the code, never protocol errors.
  await expectToolError(client, 'create_task', { title: 42 }, 'invalid_request');
  await expectToolError(client, 'create_task', {}, 'invalid_request');
  await expectToolError(client, 'list_tasks', { limit: '10' }, 'invalid_request');
  await expectToolError(client, 'update_routine', { id: routine.id, colour: 'red' }, 'invalid_request');
  await expectToolError(client, 'get_task', { id: task.id, verbose: true }, 'invalid_request');
  await expectToolError(client, 'get_task', { id: 'tsk_nope' }, 'not_found');
  await expectToolError(client, 'update_task', { id: 'tsk_nope', status: 'done' }, 'not_found');
  await expectToolError(client, 'add_comment', { id: 'tsk_nope', content: 'hello?' }, 'not_found');
  await expectToolError(client, 'trigger_routine', { id: 'rtn_nope' }, 'not_found');
  await expectToolError(client, 'create_task', { title: 'orphan', project_id: 'prj_nope' }, 'not_found');
  // An unknown tool is a protocol error (MCP spec), and the session carries on.
  const unknown = await client.callTool({ name: 'drop_database', arguments: {} }).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(unknown).toBeInstanceOf(McpError);
  expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams);

  expect((await call(client, 'delete_task', { id: task.id })).structuredContent).toEqual({ id: task.id, deleted: true });
  expect((await call(client, 'delete_routine', { id: routine.id })).structuredContent).toEqual({ id: routine.id, deleted: true });
  await expectToolError(client, 'get_routine', { id: routine.id }, 'not_found');
  await expectToolError(client, 'delete_task', { id: task.id }, 'not_found');
}

async function createKey(server: TestServer, agentId: string): Promise<{ id: string; key: string }> {
  const res = await server.api.post('/api/v1/auth/keys', { agent_id: agentId, role: 'agent' });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.data.id as string, key: res.body.data.key as string };
}

async function agentKey(server: TestServer, agentId: string): Promise<string> {
  return (await createKey(server, agentId)).key;
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** tools/list sent by hand on an existing session, to see the HTTP status (the body read whole, so the connection is released). */
async function rawToolsList(server: TestServer, key: string, session: { sessionId?: string; protocolVersion?: string }): Promise<Response> {
  const res = await fetch(`${server.url}/core/mcp`, {
    method: 'POST',
    headers: {
      ...JSON_HEADERS,
      authorization: `Bearer ${key}`,
      'mcp-session-id': session.sessionId!,
      'mcp-protocol-version': session.protocolVersion!,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  });
  return new Response(await res.arrayBuffer(), { status: res.status, headers: res.headers });
}

function httpTransport(server: TestServer, key?: string): StreamableHTTPClientTransport {
  const headers: Record<string, string> = key ? { Authorization: `Bearer ${key}` } : {};
  return new StreamableHTTPClientTransport(new URL('/core/mcp', server.url), { requestInit: { headers } });
}

describeEachDialect('MCP', (dialect) => {
  const server = useServer(dialect);

  it('serves the tools over Streamable HTTP with the key as actor', async () => {
    const client = await connect(httpTransport(server, await agentKey(server, 'mcp-http')));
    try {
      await exercise(server, client, 'mcp-http');
    } finally {
      await client.close();
    }
  });

  it('answers 401 without a key, and 404 for an unknown session', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    };
    const headers = JSON_HEADERS;
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
      const other = await rawToolsList(server, await agentKey(server, 'mcp-intruder'), transport);
      expect(other.status).toBe(403);
    } finally {
      await client.close();
    }
  });

  it('binds a session to its key: another key of the same agent, or another admin key, is refused (403)', async () => {
    const transport = httpTransport(server, await agentKey(server, 'mcp-twice'));
    const client = await connect(transport);
    const admin = httpTransport(server, server.adminKey);
    const adminClient = await connect(admin);
    try {
      const sameAgent = await rawToolsList(server, await agentKey(server, 'mcp-twice'), transport);
      expect(sameAgent.status).toBe(403);
      expect(((await sameAgent.json()) as { error: { code: string } }).error.code).toBe('forbidden');
      const otherAdmin = await server.api.post('/api/v1/auth/keys', { role: 'admin' });
      expect((await rawToolsList(server, otherAdmin.body.data.key, admin)).status).toBe(403);
      expect((await rawToolsList(server, server.adminKey, admin)).status).toBe(200);
    } finally {
      await adminClient.close();
      await client.close();
    }
  });

  it('ends the sessions of a revoked key: its session id is then unknown (404) to any key', async () => {
    const { id, key } = await createKey(server, 'mcp-ended');
    const transport = httpTransport(server, key);
    const client = await connect(transport);
    try {
      expect((await server.api.delete(`/api/v1/auth/keys/${id}`)).status).toBe(200);
      const after = await rawToolsList(server, await agentKey(server, 'mcp-ended'), transport);
      expect(after.status).toBe(404);
    } finally {
      await client.close();
    }
  });

  it('ends a session on DELETE: its id is then unknown (404)', async () => {
    const key = await agentKey(server, 'mcp-leaver');
    const transport = httpTransport(server, key);
    const client = await connect(transport);
    try {
      expect((await rawToolsList(server, key, transport)).status).toBe(200);
      const ended = { sessionId: transport.sessionId, protocolVersion: transport.protocolVersion };
      await transport.terminateSession();
      expect(transport.sessionId).toBeUndefined();
      const after = await rawToolsList(server, key, ended);
      expect(after.status).toBe(404);
    } finally {
      await client.close();
    }
  });

  it('refuses an open session once its key is revoked (401)', async () => {
    const { id, key } = await createKey(server, 'mcp-revoked');
    const transport = httpTransport(server, key);
    const client = await connect(transport);
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(TOOLS.length);
      const revoked = await server.api.delete(`/api/v1/auth/keys/${id}`);
      expect(revoked.status, revoked.text).toBe(200);
      expect((await rawToolsList(server, key, transport)).status).toBe(401);
      await expect(client.listTools()).rejects.toThrow();
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
