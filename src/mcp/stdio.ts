import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { SERVER_INFO } from './server.js';

/**
 * `switchboard mcp`: the server's tools over stdio for desktop MCP clients. Every request is
 * forwarded to a running server's `/core/mcp` with the given key, so the tools, their checks
 * and the actor recorded are exactly those of the HTTP endpoint.
 */
export async function serveStdio(baseUrl: string, key: string): Promise<void> {
  const upstream = new Client({ name: 'switchboard-mcp-stdio', version: SERVER_INFO.version });
  await upstream.connect(
    new StreamableHTTPClientTransport(new URL('/core/mcp', baseUrl), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
  );
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) => upstream.listTools(request.params));
  server.setRequestHandler(CallToolRequestSchema, (request) => upstream.callTool(request.params));
  // The desktop client closing stdin ends the upstream session too.
  server.onclose = () => void upstream.close();
  await server.connect(new StdioServerTransport());
}
