import { PassThrough, type Readable } from 'node:stream';
import readline from 'node:readline';
import { PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ElicitRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type ClientCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { SERVER_INFO } from './server.js';

/** As long as the server gives a user to fill a form in (a tool call waits for it). */
const HUMAN_REPLY_TIMEOUT_MS = 15 * 60_000;

interface JsonRpcMessage {
  id?: string | number | null;
  method?: string;
  params?: { _meta?: Record<string, unknown>; name?: unknown; uri?: unknown; capabilities?: ClientCapabilities };
}

/**
 * `switchboard mcp`: the server's tools over stdio for desktop MCP clients. Every request goes
 * to a running server's `/core/mcp` with the given key, so the tools, their checks and the
 * actor recorded are exactly those of the HTTP endpoint. The client's first message picks the
 * revision, as on HTTP: `initialize` is a 2025 client (served through an upstream session);
 * a message naming a revision in its `_meta` is a 2026-07-28 client (each message relayed as
 * one stateless HTTP request).
 */
export async function serveStdio(baseUrl: string, key: string): Promise<void> {
  const endpoint = new URL('/core/mcp', baseUrl);
  const { first, input } = await firstMessage(process.stdin);
  if (first === undefined) return;
  if (typeof first.params?._meta?.[PROTOCOL_VERSION_META_KEY] === 'string') relayStateless(input, endpoint, key);
  else await proxySession(input, endpoint, key, first.params?.capabilities ?? {});
}

/** Reads up to the first line, and gives it parsed plus a stream that replays everything from the start. */
async function firstMessage(stdin: Readable): Promise<{ first?: JsonRpcMessage; input: Readable }> {
  const input = new PassThrough();
  const head: Buffer[] = [];
  const line = await new Promise<string | undefined>((resolve) => {
    const onData = (chunk: Buffer) => {
      head.push(chunk);
      const text = Buffer.concat(head).toString('utf8');
      const end = text.indexOf('\n');
      if (end === -1) return;
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.pause();
      resolve(text.slice(0, end));
    };
    const onEnd = () => resolve(undefined);
    stdin.on('data', onData);
    stdin.once('end', onEnd);
  });
  if (line === undefined) return { input };
  input.write(Buffer.concat(head));
  stdin.pipe(input);
  try {
    return { first: JSON.parse(line) as JsonRpcMessage, input };
  } catch {
    // Not JSON: let the session transport answer it as the parse error it is.
    return { first: {}, input };
  }
}

/**
 * 2025: a stdio server whose every request goes through one upstream session. A form the
 * server asks (elicitation) goes to the desktop client, if it said it can show one.
 */
async function proxySession(input: Readable, endpoint: URL, key: string, capabilities: ClientCapabilities): Promise<void> {
  const upstream = new Client(
    { name: 'switchboard-mcp-stdio', version: SERVER_INFO.version },
    { capabilities: capabilities.elicitation ? { elicitation: capabilities.elicitation } : {} },
  );
  if (capabilities.elicitation) {
    upstream.setRequestHandler(ElicitRequestSchema, (request, extra) =>
      server.elicitInput(request.params, { timeout: HUMAN_REPLY_TIMEOUT_MS, signal: extra.signal }),
    );
  }
  await upstream.connect(new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  const resources = upstream.getServerCapabilities()?.resources !== undefined;
  const server = new Server(SERVER_INFO, {
    capabilities: resources ? { tools: {}, resources: {} } : { tools: {} },
    instructions: upstream.getInstructions(),
  });
  server.setRequestHandler(ListToolsRequestSchema, (request) => upstream.listTools(request.params));
  if (resources) {
    server.setRequestHandler(ListResourcesRequestSchema, (request) => upstream.listResources(request.params));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, (request) => upstream.listResourceTemplates(request.params));
    server.setRequestHandler(ReadResourceRequestSchema, (request) => upstream.readResource(request.params));
  }
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    upstream.callTool(request.params, undefined, { timeout: HUMAN_REPLY_TIMEOUT_MS, signal: extra.signal }),
  );
  // The desktop client closing stdin ends the upstream session too.
  server.onclose = () => void upstream.close();
  await server.connect(new StdioServerTransport(input, process.stdout));
}

/** An HTTP header value as MCP writes it: as is when it is plain printable ASCII, else base64 in a sentinel. */
function headerValue(value: string): string {
  const plain = value.length > 0 && value === value.trim() && /^[\x20-\x7e\t]*$/.test(value) && !value.startsWith('=?base64?');
  return plain ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** The request headers MCP 2026-07-28 derives from a message (version, method, name). */
function headersOf(message: JsonRpcMessage, key: string): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${key}`,
  };
  const version = message.params?._meta?.[PROTOCOL_VERSION_META_KEY];
  if (typeof version === 'string') headers['mcp-protocol-version'] = version;
  if (typeof message.method === 'string') headers['mcp-method'] = message.method;
  const name = message.method === 'resources/read' ? message.params?.uri : message.params?.name;
  if (typeof name === 'string') headers['mcp-name'] = headerValue(name);
  return headers;
}

const write = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);

/** The JSON-RPC messages of a response: one JSON body, or the data of each server-sent event. */
async function messagesOf(response: Response): Promise<unknown[]> {
  const text = await response.text();
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) return text.trim() === '' ? [] : [JSON.parse(text)];
  return text
    .split(/\r?\n\r?\n/)
    .map((event) =>
      event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .join('\n'),
    )
    .filter((data) => data !== '')
    .map((data) => JSON.parse(data) as unknown);
}

/** One message to the server; its answer (or an error in its place) back to the client. */
async function relay(line: string, endpoint: URL, key: string): Promise<void> {
  let message: JsonRpcMessage;
  try {
    message = JSON.parse(line) as JsonRpcMessage;
  } catch {
    write({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    return;
  }
  const id = message.id ?? null;
  try {
    const response = await fetch(endpoint, { method: 'POST', headers: headersOf(message, key), body: line });
    const messages = response.status === 202 ? [] : await messagesOf(response).catch(() => undefined);
    if (messages !== undefined && (response.ok || messages.some((m) => typeof m === 'object' && m !== null && 'jsonrpc' in m))) {
      messages.forEach(write);
      return;
    }
    if (message.id !== undefined)
      write({ jsonrpc: '2.0', id, error: { code: -32603, message: `Switchboard answered HTTP ${response.status}`, data: messages?.[0] } });
  } catch (err) {
    if (message.id !== undefined)
      write({ jsonrpc: '2.0', id, error: { code: -32603, message: `Switchboard unreachable: ${(err as Error).message}` } });
  }
}

/** 2026-07-28: no session to keep, each line is relayed on its own (answers in the order they come). */
function relayStateless(input: Readable, endpoint: URL, key: string): void {
  readline.createInterface({ input, crlfDelay: Infinity }).on('line', (line) => {
    if (line.trim() !== '') void relay(line, endpoint, key);
  });
}
