import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';
import type { TestServer } from '../helpers/server.js';

export interface ToolError {
  code: string;
  message: string;
  details?: unknown;
}

/**
 * An MCP client over Streamable HTTP with the given key, its tools listed (so that the client
 * checks every structuredContent against the tool's outputSchema). `query` narrows the tools.
 */
export async function mcpClient(server: TestServer, key: string, query = ''): Promise<Client> {
  const client = new Client({ name: 'switchboard-test', version: '0' });
  const url = new URL(`/core/mcp${query}`, server.url);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  await client.listTools();
  return client;
}

interface CallResult {
  content: { type: string; text?: string; uri?: string; name?: string; mimeType?: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** Calls a tool that must succeed; returns the whole result (its structuredContent already checked by the client). */
export async function callOk(client: Client, name: string, args: Record<string, unknown>): Promise<CallResult & { structuredContent: Record<string, any> }> {
  const result = (await client.callTool({ name, arguments: args })) as CallResult;
  expect(result.isError, `${name}: ${result.content[0]?.text}`).toBeFalsy();
  expect(result.structuredContent).toBeTypeOf('object');
  expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
  return result as CallResult & { structuredContent: Record<string, any> };
}

/** Calls a tool that must fail as a tool error; returns the error its text carries. */
export async function callFails(client: Client, name: string, args: Record<string, unknown>): Promise<ToolError> {
  const result = (await client.callTool({ name, arguments: args })) as CallResult;
  expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  return (JSON.parse(result.content[0]!.text!) as { error: ToolError }).error;
}

/** A new agent key's secret. */
export async function agentKey(server: TestServer, agentId: string): Promise<string> {
  return (await server.agent(agentId)).key!;
}
