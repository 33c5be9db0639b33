import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyHttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport as LegacyTransport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttpTransport, type FetchLike } from '@modelcontextprotocol/client';
import { expect } from 'vitest';

/** The stateless revision; its clients negotiate it (server/discover) with mode 'auto'. */
export const STATELESS_REVISION = '2026-07-28';

export type FormReply = { action: 'accept'; content: Record<string, string | number | boolean | string[]> } | { action: 'decline' | 'cancel' };
/** What a test's "user" answers to a form: sees the message and the schema, replies. */
export type User = (form: { message: string; requestedSchema: unknown }) => FormReply;

/** The two official clients behind one face, so a test runs the same steps with each. */
export interface AnyClient {
  readonly revision: 'legacy' | 'stateless';
  listTools(): Promise<{ name: string; inputSchema: Record<string, unknown>; annotations?: unknown; description?: string }[]>;
  callTool(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  negotiatedVersion(): string | undefined;
  close(): Promise<void>;
}

export interface ToolResult {
  structuredContent?: Record<string, unknown>;
  content: { type: string; text?: string }[];
  isError?: boolean;
}

/** sdk 1 (MCP 2025: initialize, a session); with a user, it declares elicitation and answers forms. */
export async function legacyClient(transport: LegacyTransport, user?: User): Promise<AnyClient> {
  const client = new LegacyClient({ name: 'switchboard-test-2025', version: '0' }, { capabilities: user ? { elicitation: { form: {} } } : {} });
  if (user) client.setRequestHandler(ElicitRequestSchema, (request) => user(request.params as { message: string; requestedSchema: unknown }));
  await client.connect(transport);
  return {
    revision: 'legacy',
    listTools: async () => (await client.listTools()).tools as Awaited<ReturnType<AnyClient['listTools']>>,
    callTool: async (name, args) => (await client.callTool({ name, arguments: args })) as ToolResult,
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
  if (user) client.setRequestHandler('elicitation/create', (request) => user(request.params as { message: string; requestedSchema: unknown }));
  await client.connect(transport);
  return {
    revision: 'stateless',
    listTools: async () => (await client.listTools()).tools as Awaited<ReturnType<AnyClient['listTools']>>,
    callTool: async (name, args) => (await client.callTool({ name, arguments: args })) as ToolResult,
    negotiatedVersion: () => client.getNegotiatedProtocolVersion(),
    close: () => client.close(),
  };
}

const endpoint = (baseUrl: string) => new URL('/core/mcp', baseUrl);
const bearer = (key?: string): Record<string, string> => (key ? { Authorization: `Bearer ${key}` } : {});

export function legacyHttp(baseUrl: string, key?: string): LegacyHttpTransport {
  return new LegacyHttpTransport(endpoint(baseUrl), { requestInit: { headers: bearer(key) } });
}

export function modernHttp(baseUrl: string, key?: string, fetch?: FetchLike): ModernHttpTransport {
  return new ModernHttpTransport(endpoint(baseUrl), { requestInit: { headers: bearer(key) }, fetch });
}

/** Calls a tool: every result, success or tool error, is structuredContent plus its JSON text rendering. */
export async function call(client: AnyClient, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const result = await client.callTool(name, args);
  expect(result.structuredContent, `${name} ${JSON.stringify(result)}`).toBeTypeOf('object');
  expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
  return result;
}
