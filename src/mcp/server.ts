import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  inputRequired,
  inputResponse,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  Server as ModernServer,
  type AuthInfo as ModernAuthInfo,
  type ElicitInputParams,
  type Tool as ModernListedTool,
} from '@modelcontextprotocol/server';
import { Server as LegacyServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  type ElicitRequestFormParams,
  isInitializeRequest,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ResourceTemplate as ListedResourceTemplate,
  type Tool as ListedTool,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { authorizeDeclared, credentialOf, type Permission, type Principal } from '../auth/index.js';
import { hijackWithSecurityHeaders } from '../http/security-headers.js';
import { API_VERSION } from '../http/server.js';
import { AppError, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import type { OpenConnections } from '../kernel/open-connections.js';
import { McpSessionTable } from './session-table.js';
import { callTool, parseToolGroups, TOOL_GROUPS, type Tool, type ToolGroup, type ToolOutput, type ToolResult } from './tools/index.js';

export const SERVER_INFO = { name: 'switchboard', version: API_VERSION };

/** The MCP revision served without sessions: any node answers any request (cluster mode). */
export const STATELESS_REVISION = '2026-07-28';

/** A form MCP clients can show their user: a flat object of primitive fields (MCP elicitation). */
export type ElicitationSchema = ElicitRequestFormParams['requestedSchema'];

/** What a tool asks the client's user. */
export interface Question {
  message: string;
  requestedSchema: ElicitationSchema;
}

export type UserReply = { action: 'accept'; content: Record<string, unknown> } | { action: 'decline' | 'cancel' };

/**
 * A tool that asks the client's user before it finishes. Split in two because on the
 * stateless revision the reply comes back in a new request, maybe to another node: `state`
 * (which travels through the client, so `finish` re-checks it) is all that links the halves.
 */
export interface InteractiveTool extends Omit<Tool, 'call' | 'links'> {
  ask(args: unknown, principal: Principal): Promise<{ question: Question; state: string }>;
  finish(state: string, reply: UserReply, principal: Principal): Promise<ToolOutput>;
}

/** One entry of resources/list. */
export interface ResourceEntry {
  uri: string;
  name: string;
  title?: string;
  mimeType?: string;
  size?: number;
}

/** What resources/read gives: text, or base64 bytes (`blob`) for binary content. */
export type ResourceContents = { uri: string; mimeType: string; text: string } | { uri: string; mimeType: string; blob: string };

/** A kind of resource: the URI template (RFC 6570) of its URIs, the ones a caller sees listed, and its reader. */
export interface McpResource {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  /** What reading (or listing) this kind needs, as its HTTP GET route. */
  permission: Permission;
  /** resources/list: those of this kind the caller may read (a bounded number, e.g. the newest). */
  list(principal: Principal): Promise<ResourceEntry[]>;
  /** resources/read of a URI its template matches, as the caller. AppErrors become protocol errors (not_found: unknown resource). */
  read(uri: string, principal: Principal): Promise<ResourceContents[]>;
}

/** What the MCP endpoint (and `switchboard mcp`) serves, to clients of every revision. */
export interface McpSurface {
  tools: Tool[];
  interactive?: InteractiveTool[];
  resources?: McpResource[];
  /** Told to clients when they connect (initialize, server/discover). */
  instructions?: string;
}

/**
 * The surface a `?tools=` query asks for: the tools (interactive ones too) of the given groups,
 * the resources and instructions as they are.
 */
function narrowSurface(surface: McpSurface, groups: readonly ToolGroup[]): McpSurface {
  const wanted = (tool: { group: ToolGroup }) => groups.includes(tool.group);
  return { ...surface, tools: surface.tools.filter(wanted), interactive: surface.interactive?.filter(wanted) };
}

const NO_ELICITATION =
  'This MCP client cannot ask its user (it declares no elicitation capability): answer the step with submit_step_input';
/** How long a 2025 client's user has to fill a form in (the default request timeout is a minute). */
const HUMAN_REPLY_TIMEOUT_MS = 15 * 60_000;
/** The key of the one form an interactive tool asks for in an input-required result. */
const REPLY_KEY = 'reply';

const LISTED_FIELDS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const;

/** tools/list: the fields MCP defines, whatever else a tool carries. */
function listingOf(tool: Tool | InteractiveTool): ListedTool {
  const fields = tool as unknown as Record<string, unknown>;
  return Object.fromEntries(
    LISTED_FIELDS.filter((field) => fields[field] !== undefined).map((field) => [field, fields[field]]),
  ) as ListedTool;
}

/** Runs one half of an interactive tool as a tool call: errors become tool errors as for any tool. */
function runHalf(
  tool: InteractiveTool,
  work: (principal: Principal) => Promise<ToolOutput>,
  principal: Principal,
  logger: Logger,
): Promise<ToolResult> {
  return callTool({ ...tool, call: (_args, caller) => work(caller), links: () => [] }, undefined, principal, logger);
}

/** The protocol errors of resources/*, as each revision (and SDK) spells them. */
interface ProtocolErrors {
  /** The code of a resource not found: -32002 in MCP 2025, -32602 (invalid params) in 2026-07-28. */
  notFound: number;
  error(code: number, message: string, data: Record<string, unknown>): Error;
}

class Catalogue {
  readonly listing: ListedTool[];
  readonly templates: ListedResourceTemplate[];
  readonly capabilities: { tools: object; resources?: object };
  private readonly tools: Map<string, Tool>;
  private readonly interactive: Map<string, InteractiveTool>;
  private readonly resources: { resource: McpResource; template: UriTemplate }[];

  constructor(
    surface: McpSurface,
    private readonly logger: Logger,
  ) {
    const interactive = surface.interactive ?? [];
    const resources = surface.resources ?? [];
    this.listing = [...surface.tools, ...interactive].map(listingOf);
    this.tools = new Map(surface.tools.map((tool) => [tool.name, tool]));
    this.interactive = new Map(interactive.map((tool) => [tool.name, tool]));
    this.resources = resources.map((resource) => ({ resource, template: new UriTemplate(resource.uriTemplate) }));
    this.templates = resources.map(({ uriTemplate, name, title, description, mimeType }) => ({
      uriTemplate,
      name,
      title,
      description,
      mimeType,
    }));
    this.capabilities = resources.length > 0 ? { tools: {}, resources: {} } : { tools: {} };
  }

  /** resources/list: what each kind lists for the caller. */
  async list(principal: Principal, errors: ProtocolErrors): Promise<{ resources: ResourceEntry[] }> {
    // Kinds the caller lacks the permission for are left out of the list (reading one is a 403).
    const readable = this.resources.filter(({ resource }) => principal.permissions.has(resource.permission));
    const listed = await this.answer(errors, undefined, () => Promise.all(readable.map(({ resource }) => resource.list(principal))));
    return { resources: listed.flat() };
  }

  /** resources/read: read by the first kind whose template matches. */
  async read(uri: string, principal: Principal, errors: ProtocolErrors): Promise<{ contents: ResourceContents[] }> {
    const contents = await this.answer(errors, uri, () => {
      const found = this.resources.find(({ template }) => template.match(uri) !== null);
      if (!found) throw new NotFound('Resource', uri);
      authorizeDeclared(principal, { permission: found.resource.permission });
      return found.resource.read(uri, principal);
    });
    return { contents };
  }

  /**
   * A resource request's answer. MCP has no resource-level error result: failures are protocol
   * errors, whose message starts with the API's code and whose data carries it.
   */
  private async answer<T>(errors: ProtocolErrors, uri: string | undefined, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (!(err instanceof AppError)) {
        this.logger.error({ err, uri }, 'MCP resource request failed');
        throw errors.error(ErrorCode.InternalError, 'internal_error: Internal error', { code: 'internal_error', uri });
      }
      const code = err.code === 'not_found' ? errors.notFound : ErrorCode.InvalidParams;
      throw errors.error(code, `${err.code}: ${err.message}`, { code: err.code, message: err.message, uri });
    }
  }

  /** The tool of that name, or the protocol error MCP asks for an unknown one. */
  find(name: string, unknown: (message: string) => Error): { tool: Tool } | { interactive: InteractiveTool } {
    const tool = this.tools.get(name);
    if (tool) return { tool };
    const interactive = this.interactive.get(name);
    if (interactive) return { interactive };
    throw unknown(`Unknown tool '${name}'`);
  }
}

/** The stateless revision builds a server per request: what a surface serves is worked out once. */
const catalogues = new WeakMap<McpSurface, Catalogue>();
function catalogueOf(surface: McpSurface, logger: Logger): Catalogue {
  let catalogue = catalogues.get(surface);
  if (!catalogue) catalogues.set(surface, (catalogue = new Catalogue(surface, logger)));
  return catalogue;
}

/**
 * The 2025 revisions' server (sdk 1, one per session). `principalOf` finds the caller of each
 * request: over HTTP every request carries its own API key. An interactive tool asks the user
 * with an elicitation request on the session.
 */
export function createMcpServer(
  surface: McpSurface,
  logger: Logger,
  principalOf: (authInfo: AuthInfo | undefined) => Principal,
): LegacyServer {
  const catalogue = catalogueOf(surface, logger);
  const server = new LegacyServer(SERVER_INFO, { capabilities: catalogue.capabilities, instructions: surface.instructions });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: catalogue.listing }));
  if (catalogue.capabilities.resources) {
    // MCP 2025: -32002 for a resource not found.
    const errors: ProtocolErrors = { notFound: -32002, error: (code, message, data) => new McpError(code, message, data) };
    server.setRequestHandler(ListResourcesRequestSchema, (_request, extra) => catalogue.list(principalOf(extra.authInfo), errors));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: catalogue.templates }));
    server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
      catalogue.read(request.params.uri, principalOf(extra.authInfo), errors),
    );
  }
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const found = catalogue.find(request.params.name, (message) => new McpError(ErrorCode.InvalidParams, message));
    const principal = principalOf(extra.authInfo);
    if ('tool' in found) return callTool(found.tool, request.params.arguments, principal, logger, extra.signal);
    const tool = found.interactive;
    return runHalf(
      tool,
      async (caller) => {
        const { question, state } = await tool.ask(request.params.arguments, caller);
        if (!server.getClientCapabilities()?.elicitation) throw new InvalidRequest(NO_ELICITATION);
        const reply = await server.elicitInput({ mode: 'form', ...question }, { timeout: HUMAN_REPLY_TIMEOUT_MS, signal: extra.signal });
        return tool.finish(
          state,
          reply.action === 'accept' ? { action: 'accept', content: reply.content ?? {} } : { action: reply.action },
          caller,
        );
      },
      principal,
      logger,
    );
  });
  return server;
}

/**
 * The 2026-07-28 revision's server (sdk 2, one per request, no session). An interactive tool
 * answers its first call with an input-required result carrying the form; the client retries
 * the call with the user's reply and the state, to whichever node.
 */
export function createStatelessMcpServer(
  surface: McpSurface,
  logger: Logger,
  principalOf: (authInfo: ModernAuthInfo | undefined) => Principal,
): ModernServer {
  const catalogue = catalogueOf(surface, logger);
  const server = new ModernServer(SERVER_INFO, { capabilities: catalogue.capabilities, instructions: surface.instructions });
  // Both SDKs describe the same JSON: tools/list and the forms are built once (in the 2025 SDK's types).
  const listing = catalogue.listing as ModernListedTool[];
  server.setRequestHandler('tools/list', () => ({ tools: listing }));
  if (catalogue.capabilities.resources) {
    // MCP 2026-07-28: a resource not found is invalid params (what the SDK's ResourceNotFoundError sends), with the uri.
    const errors: ProtocolErrors = {
      notFound: ProtocolErrorCode.InvalidParams,
      error: (code, message, data) => new ProtocolError(code, message, data),
    };
    server.setRequestHandler('resources/list', (_request, ctx) => catalogue.list(principalOf(ctx.http?.authInfo), errors));
    server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: catalogue.templates }));
    server.setRequestHandler('resources/read', (request, ctx) =>
      catalogue.read(request.params.uri, principalOf(ctx.http?.authInfo), errors),
    );
  }
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const found = catalogue.find(request.params.name, (message) => new ProtocolError(ProtocolErrorCode.InvalidParams, message));
    const principal = principalOf(ctx.http?.authInfo);
    if ('tool' in found) return callTool(found.tool, request.params.arguments, principal, logger, ctx.mcpReq.signal);
    const tool = found.interactive;
    const reply = inputResponse(ctx.mcpReq.inputResponses, REPLY_KEY);
    if (reply.kind === 'elicit') {
      const state = ctx.mcpReq.requestState();
      const answer: UserReply = reply.action === 'accept' ? { action: 'accept', content: reply.content ?? {} } : { action: reply.action };
      return runHalf(tool, (caller) => tool.finish(typeof state === 'string' ? state : '', answer, caller), principal, logger);
    }
    let asking: { question: Question; state: string } | undefined;
    const refused = await runHalf(
      tool,
      async (caller) => {
        const capabilities = (ctx.mcpReq.envelope as Record<string, { elicitation?: unknown } | undefined> | undefined)?.[
          CLIENT_CAPABILITIES_META_KEY
        ];
        asking = await tool.ask(request.params.arguments, caller);
        if (!capabilities?.elicitation) throw new InvalidRequest(NO_ELICITATION);
        return {};
      },
      principal,
      logger,
    );
    if (!asking || refused.isError) return refused;
    return inputRequired({
      inputRequests: { [REPLY_KEY]: inputRequired.elicit({ mode: 'form', ...asking.question } as ElicitInputParams) },
      requestState: asking.state,
    });
  });
  return server;
}

const SIGNED = 'signed:';

/**
 * A session belongs to the API key (or console session) that opened it, not to its agent or
 * role: revoking the key ends its sessions, and another key (of the same agent, or another
 * admin key) cannot take them over. A signed request has no key; its session belongs to the
 * signing agent.
 */
function ownerOf(principal: Principal): string {
  return credentialOf(principal) ?? `${SIGNED}${principal.agentId}`;
}

const SWEEP_INTERVAL_MS = 60_000;

/** The limits of the sessions of the 2025 revisions (config: SWITCHBOARD_MCP_SESSIONS_PER_KEY, SWITCHBOARD_MCP_SESSION_IDLE_S). */
export interface McpSessionLimits {
  /** Sessions one credential may hold on a node; a new one evicts its least recently used. */
  perKey: number;
  /** A session not used for this long is closed: clients that vanish never send DELETE. */
  idleMs: number;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The request as a web Request for sdk 2 (its body already parsed: passed beside it). */
function webRequestOf(request: FastifyRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length' || name === 'host' || name === 'connection') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(new URL(request.url, 'http://switchboard.invalid'), { method: request.method, headers, signal });
}

async function sendWebResponse(request: FastifyRequest, reply: FastifyReply, response: Response): Promise<void> {
  hijackWithSecurityHeaders(request, reply);
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  reply.raw.writeHead(response.status, headers);
  if (response.body) await pipeline(Readable.fromWeb(response.body as WebReadableStream), reply.raw).catch(() => undefined);
  else reply.raw.end();
}

/**
 * `/core/mcp` serves two MCP revisions, each client picking as the spec's version negotiation
 * says. The 2025 ones: Streamable HTTP with sessions (`initialize`, then the Mcp-Session-Id it
 * returns; POST messages, GET the server's stream, DELETE ends the session). 2026-07-28: each
 * POST stands alone (its `_meta` and MCP-Protocol-Version header name the revision; no
 * handshake, no session), so any node answers it. The routes sit behind the usual API-key
 * authentication; the principal travels to the tools as the transport's `authInfo`. A revoked
 * key's sessions (and their open streams) end with its other connections (OpenConnections); a
 * stateless request carries the key each time. `?tools=routines,tasks` narrows
 * the tools on both revisions (a session keeps those it was opened with).
 */
export function mcpRoutes(surface: McpSurface, logger: Logger, connections: OpenConnections, limits: McpSessionLimits): FastifyPluginAsync {
  return async (app) => {
    const sessions = new McpSessionTable(limits.perKey);
    const principalOf = (authInfo: AuthInfo | ModernAuthInfo | undefined) => authInfo?.extra?.principal as Principal;
    // The stateless server of a request serves the surface its `?tools=` asked for (handle puts it beside the principal).
    const stateless = createMcpHandler(
      ({ authInfo }) => createStatelessMcpServer(authInfo?.extra?.surface as McpSurface, logger, principalOf),
      {
        legacy: 'reject',
        onerror: (err) => logger.debug({ err }, 'MCP request refused'),
      },
    );

    // One surface per set of groups asked for (at most 2^6 - 1), so each has its catalogue worked out once.
    const narrowed = new Map<string, McpSurface>();
    /** What `?tools=routines,tasks` asks for (every tool without it; 400 for an unknown group). */
    function surfaceFor(request: FastifyRequest): McpSurface {
      const groups = parseToolGroups((request.query as { tools?: string | string[] }).tools);
      const key = TOOL_GROUPS.filter((group) => groups.includes(group)).join(',');
      let served = narrowed.get(key);
      if (!served) narrowed.set(key, (served = narrowSurface(surface, groups)));
      return served;
    }

    const forget = (id: string) => {
      sessions.get(id)?.release();
      sessions.delete(id);
    };
    async function open(principal: Principal, served: McpSurface): Promise<StreamableHTTPServerTransport> {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        // Called before initialize is answered, so the client's next request finds the session.
        onsessioninitialized: (id) => {
          const release = connections.hold(credentialOf(principal), () => void transport.close());
          for (const evicted of sessions.add(id, { transport, credential: ownerOf(principal), lastSeen: Date.now(), release })) {
            evicted.release();
            void evicted.transport.close();
          }
        },
        onsessionclosed: forget,
      });
      transport.onclose = () => {
        if (transport.sessionId) forget(transport.sessionId);
      };
      await createMcpServer(served, logger, principalOf).connect(transport);
      return transport;
    }

    async function handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const { principal } = request;
      const served = surfaceFor(request);
      const authInfo = { token: '', clientId: principal.actor, scopes: [], extra: { principal, surface: served } };
      const sessionId = header(request, 'mcp-session-id');
      if (sessionId === undefined && request.method === 'POST') {
        const aborted = new AbortController();
        reply.raw.once('close', () => aborted.abort());
        const webRequest = webRequestOf(request, aborted.signal);
        if (!(await isLegacyRequest(webRequest, request.body))) {
          return sendWebResponse(request, reply, await stateless.fetch(webRequest, { authInfo, parsedBody: request.body }));
        }
      }
      let transport: StreamableHTTPServerTransport;
      if (sessionId !== undefined) {
        const session = sessions.get(sessionId);
        // 404 tells the client to initialize a new session (MCP spec, session management).
        if (!session) throw new NotFound('MCP session', sessionId);
        if (session.credential !== ownerOf(principal)) throw new Forbidden('This MCP session belongs to another key');
        sessions.touch(sessionId, Date.now());
        transport = session.transport;
      } else if (request.method === 'POST' && isInitializeRequest(request.body)) {
        transport = await open(principal, served);
      } else {
        throw new InvalidRequest(
          `Send initialize first, then the Mcp-Session-Id header it returns (or, with MCP ${STATELESS_REVISION}, no session at all)`,
        );
      }
      (request.raw as IncomingMessage & { auth?: AuthInfo }).auth = authInfo;
      hijackWithSecurityHeaders(request, reply);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    }

    const schema = { hide: true };
    app.post('/', { config: { permission: 'authenticated' }, schema }, handle);
    app.get('/', { config: { permission: 'authenticated' }, schema }, handle);
    app.delete('/', { config: { permission: 'authenticated' }, schema }, handle);

    const sweeper = setInterval(
      () => {
        for (const { transport } of sessions.idleSince(Date.now() - limits.idleMs)) void transport.close();
      },
      Math.min(SWEEP_INTERVAL_MS, Math.max(1000, limits.idleMs / 2)),
    );
    sweeper.unref();

    // Open GET streams would hold the server's close: end every session first.
    app.addHook('preClose', async () => {
      clearInterval(sweeper);
      await stateless.close();
      await Promise.all([...sessions.values()].map(({ transport }) => transport.close()));
      for (const { release } of sessions.values()) release();
      sessions.clear();
    });
  };
}
