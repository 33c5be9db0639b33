import { AgentCard, SSE_HEADERS, formatSSEErrorEvent, formatSSEEvent } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { actsForPlatform, credentialOf } from '../auth/index.js';
import { pipeline } from 'node:stream/promises';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../http/input-guards.js';
import { AgentId } from '../http/schemas.js';
import { hijackWithSecurityHeaders } from '../http/security-headers.js';
import { streamBody } from '../http/stream-body.js';
import { mayHoldUnstorable, refuseUnstorable } from '../kernel/json.js';
import type { OpenConnections } from '../kernel/open-connections.js';
import { A2aHandler, AGENT_ID, agentCard, CALLER, SIGNAL } from './protocol.js';
import type { A2aCaller, A2aService } from './service.js';

const AgentParams = Type.Object({ agentId: AgentId });
/** A2A's routes are not part of the REST API's document: A2A describes them (agent cards). */
const schema = { hide: true };

type JsonRpcResponse = { jsonrpc: string; id: string | number | null; result?: unknown; error?: unknown };

/** A JSON-RPC error answer for a body the transport never saw (not JSON, too deep, a NUL). */
function refusal(code: number, message: string): JsonRpcResponse {
  return { jsonrpc: '2.0', id: null, error: { code, message } };
}

/**
 * The A2A binding: Switchboard's card at the root's well-known path (public) with its JSON-RPC
 * endpoint at `/a2a`, which routes each message through discovery; each registered agent's card
 * under `/a2a/{agent_id}/` and its endpoint at `/a2a/{agent_id}` (Bearer API key). A streaming
 * method answers Server-Sent Events.
 */
export function a2aRoutes(
  service: A2aService,
  options: {
    baseUrl: () => string;
    version: string;
    shutdown: AbortSignal;
    logger: Logger;
    connections: OpenConnections;
    stalledClientMs: number;
  },
): FastifyPluginAsyncTypebox {
  const handler = new A2aHandler(service, options);
  const transport = new JsonRpcTransportHandler(handler);
  return async (app) => {
    app.get('/.well-known/agent-card.json', { schema, config: { public: true } }, async (_request, reply) =>
      reply.header('Cache-Control', 'public, max-age=300').send(AgentCard.toJSON(await handler.getAgentCard())),
    );

    app.get(
      '/a2a/:agentId/.well-known/agent-card.json',
      { config: { permission: 'discovery:read' }, schema: { ...schema, params: AgentParams } },
      async (request) => {
        const { agentId } = request.params;
        return AgentCard.toJSON(agentCard(agentId, await service.agent(agentId), options.baseUrl(), options.version));
      },
    );

    // The body reaches the handler as bytes, so that JSON that does not parse is a JSON-RPC
    // parse error (-32700) rather than the REST envelope's 400; the guards every other route
    // gets from the shared parser (depth, NUL) are applied here.
    await app.register(async (scope) => {
      const rpc = scope.withTypeProvider<TypeBoxTypeProvider>();
      rpc.removeContentTypeParser('application/json');
      rpc.addContentTypeParser(['application/json', 'application/a2a+json'], { parseAs: 'buffer' }, (_request, body, done) =>
        done(null, body),
      );

      // The server's own endpoint: discovery picks the agent of each new task.
      rpc.post('/a2a', { config: { permission: 'messaging:write' }, schema }, (request, reply) => serve(request, reply, null));
      rpc.post(
        '/a2a/:agentId',
        { config: { permission: 'messaging:write' }, schema: { ...schema, params: AgentParams } },
        (request, reply) => serve(request, reply, request.params.agentId),
      );
    });

    /** One JSON-RPC call to an agent's endpoint (or the server's, `agentId` null): a plain answer or an SSE stream. */
    async function serve(request: FastifyRequest, reply: FastifyReply, agentId: string | null) {
      // Other text types reach here as strings (Fastify's text parser): the same checks apply.
      const raw = typeof request.body === 'string' ? Buffer.from(request.body) : (request.body as Buffer | undefined);
      const parsed = parse(raw);
      if ('error' in parsed) return reply.send(parsed.error);
      const principal = request.principal!;
      const caller: A2aCaller = { actor: principal.actor, agentId: principal.agentId, admin: actsForPlatform(principal) };
      // Ends a stream's watch when its client goes away.
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      const context = new ServerCallContext({
        state: new Map<string, unknown>([
          [CALLER, caller],
          [AGENT_ID, agentId],
          [SIGNAL, gone.signal],
        ]),
      });
      const answer = await transport.handle(parsed.body, context);
      if (!(Symbol.asyncIterator in answer)) return reply.send(answer);
      const id = typeof parsed.body.id === 'string' || typeof parsed.body.id === 'number' ? parsed.body.id : null;
      // The first event (or the error that comes instead) decides between SSE and a plain answer.
      const events = answer[Symbol.asyncIterator]();
      let first: IteratorResult<JsonRpcResponse>;
      try {
        first = await events.next();
      } catch (err) {
        return reply.send({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
      }
      hijackWithSecurityHeaders(request, reply);
      reply.raw.writeHead(200, { ...SSE_HEADERS, 'X-Request-ID': request.id });
      async function* messages() {
        try {
          for (let next = first; !next.done; next = await events.next()) yield formatSSEEvent(next.value);
        } catch (err) {
          yield formatSSEErrorEvent({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
        }
      }
      // A revoked key's stream ends like its other connections (the watch stops on `gone`).
      const unhold = options.connections.hold(credentialOf(principal), () => gone.abort());
      try {
        // A client that reads nothing is not written to without end (streamBody).
        await pipeline(streamBody(messages(), { stalledMs: options.stalledClientMs, stop: gone.signal }), reply.raw).catch(() => undefined);
      } finally {
        unhold();
      }
    }
  };
}

/** The request's JSON-RPC object, or the JSON-RPC error that refuses it. */
function parse(raw: Buffer | undefined): { body: Record<string, unknown> } | { error: JsonRpcResponse } {
  if (!raw || raw.length === 0) return { error: refusal(-32700, 'Parse error: the body is empty') };
  if (nestsDeeperThan(raw, MAX_JSON_DEPTH))
    return { error: refusal(-32600, `Invalid request: nests deeper than ${MAX_JSON_DEPTH} levels`) };
  const text = raw.toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { error: refusal(-32700, 'Parse error: the body is not JSON') };
  }
  // Text PostgreSQL cannot hold (NUL, unpaired surrogates): no A2A field needs it.
  if (mayHoldUnstorable(text)) {
    try {
      refuseUnstorable(body, undefined, 'body');
    } catch (err) {
      return { error: refusal(-32602, (err as Error).message) };
    }
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { error: refusal(-32600, 'Invalid request: not a JSON-RPC object') };
  }
  return { body: body as Record<string, unknown> };
}
