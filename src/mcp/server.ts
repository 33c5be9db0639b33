import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Principal } from '../auth/index.js';
import { API_VERSION } from '../http/server.js';
import { Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { serveResources, type Resource } from './resources.js';
import { callTool, instructions, parseToolGroups, type Tool } from './tools/index.js';

export const SERVER_INFO = { name: 'switchboard', version: API_VERSION };

// ---- Tools and resources (issue 26): the tool list with titles and output schemas, results with
// structuredContent, resources, and the server's instructions. Transport and sessions are below.

/**
 * An MCP server answering tools/list and tools/call with the given tools, and resources/* with
 * the given resources. `principalOf` finds the caller of each request: over HTTP every request
 * carries its own API key.
 */
export function createMcpServer(
  tools: Tool[],
  logger: Logger,
  principalOf: (authInfo: AuthInfo | undefined) => Principal,
  resources: Resource[] = [],
): Server {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const server = new Server(SERVER_INFO, { capabilities: { tools: {}, resources: {} }, instructions });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map(({ name, title, description, inputSchema, outputSchema, annotations }) => ({ name, title, description, inputSchema, outputSchema, annotations })),
  }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const tool = byName.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool '${request.params.name}'`);
    return callTool(tool, request.params.arguments, principalOf(extra.authInfo), logger, extra.signal);
  });
  serveResources(server, resources, principalOf, logger);
  return server;
}

/** The tools of the groups the client asked for with `?tools=routines,tasks` (all without it; 400 for an unknown group). */
function selectTools(tools: Tool[], request: FastifyRequest): Tool[] {
  const groups = parseToolGroups((request.query as { tools?: string | string[] }).tools);
  return tools.filter((tool) => groups.includes(tool.group));
}

// ---- end of tools and resources

const SIGNED = 'signed:';

interface Session {
  transport: StreamableHTTPServerTransport;
  /** The credential that initialized the session (see credentialOf): no other may use it. */
  credential: string;
  lastSeen: number;
}

/**
 * A session belongs to the API key that opened it, not to its agent or role: revoking the key
 * ends its sessions, and another key (of the same agent, or another admin key) cannot take
 * them over. A signed request has no key; its session belongs to the signing agent.
 */
function credentialOf(principal: Principal): string {
  return principal.keyId ?? `${SIGNED}${principal.agentId}`;
}

/** A session not used for this long is closed: clients that vanish never send DELETE. */
const SESSION_IDLE_MS = 30 * 60_000;
const SWEEP_INTERVAL_MS = 60_000;

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** What the MCP endpoint needs to know of API keys (the auth service). */
export interface KeyRevocations {
  /** Reports each revocation this node hears of (its own, other nodes', the CLI's on PostgreSQL). */
  onRevoked(listener: (keyId: string) => void): () => void;
  /** Those of the given keys that are revoked (catches what no notification told, e.g. the CLI on SQLite). */
  revokedAmong(keyIds: string[]): Promise<string[]>;
}

/**
 * Streamable HTTP at `/core/mcp` (POST messages, GET the server's stream, DELETE ends the
 * session). The routes sit behind the usual API-key authentication; the principal travels
 * to the tools as the transport's `authInfo`. A revoked key's sessions (and their open
 * streams) end when this node hears of the revocation, else at the next sweep.
 */
export function mcpRoutes(tools: Tool[], logger: Logger, keys: KeyRevocations, resources: Resource[] = []): FastifyPluginAsync {
  return async (app) => {
    const sessions = new Map<string, Session>();
    const principalOf = (authInfo: AuthInfo | undefined) => authInfo?.extra?.principal as Principal;

    async function open(credential: string, sessionTools: Tool[]): Promise<StreamableHTTPServerTransport> {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        // Called before initialize is answered, so the client's next request finds the session.
        onsessioninitialized: (id) => void sessions.set(id, { transport, credential, lastSeen: Date.now() }),
        onsessionclosed: (id) => void sessions.delete(id),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await createMcpServer(sessionTools, logger, principalOf, resources).connect(transport);
      return transport;
    }

    async function handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const { principal } = request;
      const sessionId = header(request, 'mcp-session-id');
      const sessionTools = selectTools(tools, request);
      let transport: StreamableHTTPServerTransport;
      if (sessionId !== undefined) {
        const session = sessions.get(sessionId);
        // 404 tells the client to initialize a new session (MCP spec, session management).
        if (!session) throw new NotFound('MCP session', sessionId);
        if (session.credential !== credentialOf(principal)) throw new Forbidden('This MCP session belongs to another key');
        session.lastSeen = Date.now();
        transport = session.transport;
      } else if (request.method === 'POST' && isInitializeRequest(request.body)) {
        transport = await open(credentialOf(principal), sessionTools);
      } else {
        throw new InvalidRequest('Send initialize first, then the Mcp-Session-Id header it returns');
      }
      (request.raw as IncomingMessage & { auth?: AuthInfo }).auth = { token: '', clientId: principal.actor, scopes: [], extra: { principal } };
      reply.hijack();
      await transport.handleRequest(request.raw, reply.raw, request.body);
    }

    const schema = { hide: true };
    app.post('/', { schema }, handle);
    app.get('/', { schema }, handle);
    app.delete('/', { schema }, handle);

    const endSessionsOf = (revoked: string[]) => {
      for (const { transport, credential } of sessions.values()) if (revoked.includes(credential)) void transport.close();
    };
    const stopWatching = keys.onRevoked((keyId) => endSessionsOf([keyId]));

    const sweeper = setInterval(() => {
      const cutoff = Date.now() - SESSION_IDLE_MS;
      for (const { transport, lastSeen } of sessions.values()) if (lastSeen < cutoff) void transport.close();
      const keyIds = [...new Set([...sessions.values()].map((session) => session.credential))].filter((c) => !c.startsWith(SIGNED));
      if (keyIds.length === 0) return;
      keys.revokedAmong(keyIds).then(endSessionsOf, (err: unknown) => logger.warn({ err }, 'could not check the keys of MCP sessions'));
    }, SWEEP_INTERVAL_MS);
    sweeper.unref();

    // Open GET streams would hold the server's close: end every session first.
    app.addHook('preClose', async () => {
      clearInterval(sweeper);
      stopWatching();
      await Promise.all([...sessions.values()].map(({ transport }) => transport.close()));
      sessions.clear();
    });
  };
}
