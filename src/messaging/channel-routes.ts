import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyBaseLogger } from 'fastify';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { actingAgent } from '../auth/index.js';
import { storageFault } from '../db/faults.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../http/input-guards.js';
import { AppError, InvalidRequest, PayloadTooLarge, RateLimited } from '../kernel/errors.js';
import { refuseNul } from '../kernel/json.js';
import type { RateLimiter } from '../kernel/rate-limiter.js';
import { ajvFieldProblems, type AjvIssue } from '../kernel/validation-problems.js';
import { AgentChannel, type ChannelDeps } from './channel.js';
import { CLIENT_FRAMES, ChannelQuery, FRAME_KINDS, type ChannelRequest, type ClientFrame, type FrameError, type FrameKind } from './channel-schemas.js';
import { DEFAULT_VISIBILITY_S } from './inbox.js';

/** Request frames one connection may have in progress; past it the server stops reading the socket. */
const MAX_IN_FLIGHT = 1024;
/** A connection that has not answered a ping within this long is ended (its leases run out as usual). */
const PING_INTERVAL_MS = 30_000;
/** WebSocket close codes (RFC 6455 §7.4.1). */
const GOING_AWAY = 1001;

// Frames arrive as JSON, like HTTP bodies: validated the same way (no coercion, unknown fields
// rejected by the schemas themselves, defaults applied).
const ajv = addFormats.default(new Ajv.default({ removeAdditional: false, useDefaults: true, allErrors: true, strict: false, coerceTypes: false, strictNumbers: true }));
const validators = Object.fromEntries(FRAME_KINDS.map((kind) => [kind, ajv.compile(CLIENT_FRAMES[kind])])) as Record<FrameKind, ReturnType<typeof ajv.compile>>;

/** A frame the server could not accept, answered with `error` (and `id` when the frame had a usable one). */
class RefusedFrame extends Error {
  constructor(
    readonly refusal: AppError,
    readonly id: number | undefined,
  ) {
    super(refusal.message);
  }
}

/** Parses and validates one text frame; throws RefusedFrame. */
function parseFrame(data: Buffer, isBinary: boolean, maxBytes: number): ClientFrame {
  if (isBinary) throw new RefusedFrame(InvalidRequest.field('frame', 'must be a text frame holding JSON'), undefined);
  if (data.length > maxBytes) throw new RefusedFrame(new PayloadTooLarge(`A frame holds at most ${maxBytes} bytes; this one has ${data.length}`), undefined);
  if (nestsDeeperThan(data, MAX_JSON_DEPTH)) {
    throw new RefusedFrame(InvalidRequest.field('frame', `must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels`), undefined);
  }
  let frame: unknown;
  try {
    frame = JSON.parse(data.toString('utf8'));
  } catch {
    throw new RefusedFrame(InvalidRequest.field('frame', 'is not JSON'), undefined);
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) throw new RefusedFrame(InvalidRequest.field('frame', 'must be a JSON object'), undefined);
  const fields = frame as Record<string, unknown>;
  const id = Number.isSafeInteger(fields.id) && (fields.id as number) >= 0 ? (fields.id as number) : undefined;
  const kinds = FRAME_KINDS.filter((kind) => kind in fields);
  if (kinds.length !== 1) {
    const message = kinds.length === 0 ? `must have one of ${FRAME_KINDS.join(', ')}` : `has ${kinds.join(' and ')}: one kind per frame`;
    throw new RefusedFrame(InvalidRequest.field('frame', message), id);
  }
  const validate = validators[kinds[0]!];
  if (!validate(frame)) {
    const details = ajvFieldProblems(validate.errors as AjvIssue[], '');
    throw new RefusedFrame(new InvalidRequest(`Invalid frame: ${details.map((d) => `${d.field || 'frame'} ${d.message}`).join('; ')}`, details), id);
  }
  try {
    if (data.includes('\\u0000')) refuseNul(frame, undefined, 'frame');
  } catch (err) {
    throw new RefusedFrame(err as AppError, id);
  }
  return frame as ClientFrame;
}

/** An error as the frame's `error`: typed errors keep their code; storage faults as HTTP maps them; the rest leaks nothing. */
function frameError(err: unknown, log: FastifyBaseLogger): FrameError {
  if (err instanceof RateLimited) return { code: err.code, message: err.message, details: { retry_after_seconds: Number(err.headers['Retry-After']) } };
  if (err instanceof AppError) return { code: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) };
  switch (storageFault(err)) {
    case 'unavailable':
      return { code: 'service_unavailable', message: 'The database cannot be reached right now; retry shortly' };
    case 'full':
      return { code: 'insufficient_storage', message: 'No storage space is left for this write; reads still work' };
    default:
      log.error({ err }, 'channel frame failed');
      return { code: 'internal_error', message: 'Internal server error' };
  }
}

/**
 * GET /messaging/channel, a WebSocket per agent connection (issue 27): messages pushed as they
 * arrive within the client's credit, and acks, rejects, extends, sends, subscriptions and
 * heartbeats as frames (channel-schemas.ts). Authenticated like any request before the
 * upgrade; each request frame spends the caller's rate budget as an HTTP request would.
 */
export function channelRoutes(
  deps: ChannelDeps & { limiter: RateLimiter; logger: Logger; maxFrameBytes: number },
  shutdown: AbortSignal,
): FastifyPluginAsyncTypebox {
  return async (app) => {
    const sockets = new Set<WebSocket>();
    shutdown.addEventListener('abort', () => sockets.forEach((socket) => socket.close(GOING_AWAY, 'server shutting down')), { once: true });

    app.route({
      method: 'GET',
      url: '/messaging/channel',
      config: { permission: 'messaging:write' },
      // A WebSocket, not an operation of the OpenAPI document (nor of the SDK's table).
      schema: { hide: true, querystring: ChannelQuery },
      // Before the upgrade, so that acting as another agent is an HTTP 403.
      preHandler: async (request) => {
        actingAgent(request.principal, request.query.agent_id);
      },
      handler: async () => {
        throw InvalidRequest.field('upgrade', 'GET /messaging/channel is a WebSocket: send an upgrade request (Upgrade: websocket)');
      },
      wsHandler: (socket, request) => {
        const principal = request.principal;
        const log = request.log;
        const send = (frame: unknown) => {
          if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
        };
        const channel = new AgentChannel(
          deps,
          {
            actor: principal.actor,
            agentId: actingAgent(principal, request.query.agent_id),
            visibilitySeconds: request.query.visibility_timeout ?? DEFAULT_VISIBILITY_S,
          },
          (messages) => {
            // One write for the claim's frames, not one each (a syscall per frame was most of a
            // batch's push cost).
            const tcp = request.raw.socket;
            tcp.cork();
            for (const message of messages) send({ message });
            tcp.uncork();
          },
        );
        sockets.add(socket);
        if (shutdown.aborted) socket.close(GOING_AWAY, 'server shutting down');

        let inFlight = 0;
        const answer = async (frame: ChannelRequest) => {
          if (deps.limiter.enabled) {
            const decision = await deps.limiter.consume(principal.bucket);
            if (!decision.allowed) throw new RateLimited(Math.max(1, Math.ceil((decision.resetAt - Date.now()) / 1000)));
          }
          return channel.perform(frame);
        };
        socket.on('message', (data, isBinary) => {
          let frame: ClientFrame;
          try {
            frame = parseFrame(data as Buffer, isBinary, deps.maxFrameBytes);
          } catch (err) {
            const refused = err as RefusedFrame;
            return send({ ...(refused.id === undefined ? {} : { id: refused.id }), error: frameError(refused.refusal, log) });
          }
          if ('credit' in frame) {
            try {
              channel.grant(frame.credit);
            } catch (err) {
              send({ error: frameError(err, log) });
            }
            return;
          }
          // Back-pressure: a client that outruns the database stops being read, not buffered.
          if (++inFlight === MAX_IN_FLIGHT) socket.pause();
          answer(frame)
            .then(
              (ok) => send({ id: frame.id, ok }),
              (err: unknown) => send({ id: frame.id, error: frameError(err, log) }),
            )
            .finally(() => {
              if (inFlight-- === MAX_IN_FLIGHT) socket.resume();
            });
        });

        let alive = true;
        socket.on('pong', () => (alive = true));
        const pinger = setInterval(() => {
          if (!alive) return socket.terminate();
          alive = false;
          socket.ping();
        }, PING_INTERVAL_MS);
        socket.once('close', () => {
          clearInterval(pinger);
          sockets.delete(socket);
          channel.close();
        });
      },
    });
  };
}
