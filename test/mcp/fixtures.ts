import { ROLES } from '../../src/auth/permissions.js';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyHttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport as LegacyTransport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ElicitRequestSchema,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttpTransport, type FetchLike } from '@modelcontextprotocol/client';
import { expect } from 'vitest';
import type { TestServer } from '../helpers/server.js';

/** The stateless revision; its clients negotiate it (server/discover) with mode 'auto'. */
export const STATELESS_REVISION = '2026-07-28';

/** The spec's 13 tools (routines and tasks): their names and arguments never change. */
export const SPEC_TOOLS = [
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

export interface ToolError {
  code: string;
  message: string;
  details?: unknown;
}

export type FormReply =
  { action: 'accept'; content: Record<string, string | number | boolean | string[]> } | { action: 'decline' | 'cancel' };
/** What a test's "user" answers to a form: sees the message and the schema, replies. */
export type User = (form: { message: string; requestedSchema: unknown }) => FormReply;

/**
 * The two official clients behind one face, so a test runs the same steps with each. Their
 * tools are listed on connect, so that each client checks every structuredContent against
 * the tool's outputSchema.
 */
export interface AnyClient {
  readonly revision: 'legacy' | 'stateless';
  listTools(): Promise<Tool[]>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  listResources(): Promise<Resource[]>;
  listResourceTemplates(): Promise<ResourceTemplate[]>;
  readResource(uri: string): Promise<ReadResourceResult['contents']>;
  getInstructions(): string | undefined;
  negotiatedVersion(): string | undefined;
  close(): Promise<void>;
}

/** sdk 1 (MCP 2025: initialize, a session); with a user, it declares elicitation and answers forms. */
export async function legacyClient(transport: LegacyTransport, user?: User): Promise<AnyClient> {
  const client = new LegacyClient(
    { name: 'switchboard-test-2025', version: '0' },
    { capabilities: user ? { elicitation: { form: {} } } : {} },
  );
  if (user)
    client.setRequestHandler(ElicitRequestSchema, (request) => user(request.params as { message: string; requestedSchema: unknown }));
  await client.connect(transport);
  await client.listTools();
  return {
    revision: 'legacy',
    listTools: async () => (await client.listTools()).tools,
    callTool: (params) => client.callTool(params),
    listResources: async () => (await client.listResources()).resources,
    listResourceTemplates: async () => (await client.listResourceTemplates()).resourceTemplates,
    readResource: async (uri) => (await client.readResource({ uri })).contents,
    getInstructions: () => client.getInstructions(),
    negotiatedVersion: () => undefined,
    close: () => client.close(),
  };
}

/** client 2 negotiating the revision (it picks 2026-07-28 where served); with a user, it answers forms. */
export async function modernClient(transport: Parameters<ModernClient['connect']>[0], user?: User): Promise<AnyClient> {
  const client = new ModernClient(
    { name: 'switchboard-test-2026', version: '0' },
    { capabilities: user ? { elicitation: { form: {} } } : {}, versionNegotiation: { mode: 'auto' } },
  );
  if (user)
    client.setRequestHandler('elicitation/create', (request) => user(request.params as { message: string; requestedSchema: unknown }));
  await client.connect(transport);
  await client.listTools();
  // Both SDKs describe the same JSON: read in the 2025 SDK's types.
  return {
    revision: 'stateless',
    listTools: async () => (await client.listTools()).tools as Tool[],
    callTool: (params) => client.callTool(params),
    listResources: async () => (await client.listResources()).resources as Resource[],
    listResourceTemplates: async () => (await client.listResourceTemplates()).resourceTemplates as ResourceTemplate[],
    readResource: async (uri) => (await client.readResource({ uri })).contents as ReadResourceResult['contents'],
    getInstructions: () => client.getInstructions(),
    negotiatedVersion: () => client.getNegotiatedProtocolVersion(),
    close: () => client.close(),
  };
}

/** `query` narrows the tools (`?tools=…`). */
const endpoint = (baseUrl: string, query = '') => new URL(`/core/mcp${query}`, baseUrl);
const bearer = (key?: string): Record<string, string> => (key ? { Authorization: `Bearer ${key}` } : {});

export function legacyHttp(baseUrl: string, key?: string, query?: string): LegacyHttpTransport {
  return new LegacyHttpTransport(endpoint(baseUrl, query), { requestInit: { headers: bearer(key) } });
}

export function modernHttp(baseUrl: string, key?: string, options: { query?: string; fetch?: FetchLike } = {}): ModernHttpTransport {
  return new ModernHttpTransport(endpoint(baseUrl, options.query), { requestInit: { headers: bearer(key) }, fetch: options.fetch });
}

/** Each revision's client over HTTP, for tests that run the same steps with both. */
export const HTTP_CLIENTS: [string, (server: TestServer, key?: string, query?: string, user?: User) => Promise<AnyClient>][] = [
  ['2025 (sdk 1)', (server, key, query, user) => legacyClient(legacyHttp(server.url, key, query), user)],
  ['2026-07-28 (client 2)', (server, key, query, user) => modernClient(modernHttp(server.url, key, { query }), user)],
];

/**
 * An sdk 1 client over Streamable HTTP with the given key, its tools listed (so that the client
 * checks every structuredContent against the tool's outputSchema). `query` narrows the tools.
 */
export async function mcpClient(server: TestServer, key: string, query = ''): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'switchboard-test', version: '0' });
  await client.connect(legacyHttp(server.url, key, query));
  await client.listTools();
  return client;
}

interface CallResult {
  content: { type: string; text?: string; uri?: string; name?: string; mimeType?: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** What callOk and callFails need of a client: sdk 1's Client and AnyClient both have it. */
interface ToolCaller {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
}

/** Calls a tool that must succeed; returns the whole result (its structuredContent already checked by the client). */
export async function callOk(
  client: ToolCaller,
  name: string,
  args: Record<string, unknown>,
): Promise<CallResult & { structuredContent: Record<string, any> }> {
  const result = (await client.callTool({ name, arguments: args })) as CallResult;
  expect(result.isError, `${name}: ${result.content[0]?.text}`).toBeFalsy();
  expect(result.structuredContent).toBeTypeOf('object');
  expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
  return result as CallResult & { structuredContent: Record<string, any> };
}

/** Calls a tool that must fail as a tool error; returns the error its text carries. */
export async function callFails(client: ToolCaller, name: string, args: Record<string, unknown>): Promise<ToolError> {
  const result = (await client.callTool({ name, arguments: args })) as CallResult;
  expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  return (JSON.parse(result.content[0]!.text!) as { error: ToolError }).error;
}

/** A request of the stateless revision, by hand (the body read whole). */
export async function statelessRequest(
  server: TestServer,
  key: string | undefined,
  method: string,
  params: Record<string, unknown> = {},
  query = '',
): Promise<Response> {
  const res = await fetch(endpoint(server.url, query), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': STATELESS_REVISION,
      'mcp-method': method,
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': STATELESS_REVISION,
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  return new Response(await res.arrayBuffer(), { status: res.status, headers: res.headers });
}

/** A new agent key's secret. */
export async function agentKey(server: TestServer, agentId: string): Promise<string> {
  return (await server.agent(agentId)).key!;
}

/** The scopes of an agent key an admin allowed to answer human steps (the agent role holds no approvals:decide). */
export const DECIDING_AGENT = [...ROLES.agent, 'approvals:decide'];

/** An agent key that may also decide human steps (request_step_input, submit_step_input). */
export async function decidingAgentKey(server: TestServer, agentId: string): Promise<string> {
  const res = await server.api.post('/api/v1/auth/keys', { agent_id: agentId, scopes: DECIDING_AGENT });
  return res.body.data.key as string;
}
