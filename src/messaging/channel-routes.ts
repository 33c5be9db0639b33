import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyBaseLogger } from 'fastify';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { actingAgent, credentialOf } from '../auth/index.js';
import { storageFault } from '../db/faults.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../http/input-guards.js';
import { AppError, InvalidRequest, PayloadTooLarge, RateLimited } from '../kernel/errors.js';
import { mayHoldUnstorable, refuseUnstorable } from '../kernel/json.js';
import type { OpenConnections } from '../kernel/open-connections.js';
import type { RateLimiter } from '../kernel/rate-limiter.js';
import { ajvFieldProblems, type AjvIssue } from '../kernel/validation-problems.js';
import { AgentChannel, type ChannelDeps } from './channel.js';
import {
  CLIENT_FRAMES,
  ChannelQuery,
  FRAME_KINDS,
  type ChannelRequest,
  type ClientFrame,
  type FrameError,
  type FrameKind,
} from './channel-schemas.js';
import { DEFAULT_VISIBILITY_S } from './inbox.js';

/** Request frames one connection may have in progress; past it the server stops reading the socket. */
const MAX_IN_FLIGHT = 1024;
/** A connection that has not answered a ping within this long is ended (its leases run out as usual). */
const PING_INTERVAL_MS = 30_000;
/**
 * Bytes sent that the client may leave unread; past it the server stops reading its frames and
 * leasing it messages until it has read them, and closes it when it has not for
 * SWITCHBOARD_STALLED_CLIENT_MS. Without it a client that never reads grew the server's memory by
 * every answer (23 MB of 8-byte bad frames took 1.3 GB).
 */
const MAX_UNREAD_BYTES = 1024 * 1024;
/** Frames refused one after the other (unreadable, invalid) after which the connection is closed. */
const MAX_REFUSED_IN_A_ROW = 32;
/** WebSocket close codes (RFC 6455 §7.4.1). */
const GOING_AWAY = 1001;
const POLICY_VIOLATION = 1008;

// Frames arrive as JSON, like HTTP bodies: validated the same way (no coercion, unknown fields
// rejected by the schemas themselves, defaults applied).
const ajv = addFormats.default(
  new Ajv.default({ removeAdditional: false, useDefaults: true, allErrors: true, strict: false, coerceTypes: false, strictNumbers: true }),
);
const validators = Object.fromEntries(FRAME_KINDS.map((kind) => [kind, ajv.compile(CLIENT_FRAMES[kind])])) as Record<
  FrameKind,
  ReturnType<typeof ajv.compile>
>;

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
  if (data.length > maxBytes)
    throw new RefusedFrame(new PayloadTooLarge(`A frame holds at most ${maxBytes} bytes; this one has ${data.length}`), undefined);
  if (nestsDeeperThan(data, MAX_JSON_DEPTH)) {
    throw new RefusedFrame(
      InvalidRequest.field('frame', `must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels`),
      undefined,
    );
  }
  let frame: unknown;
  try {
    frame = JSON.parse(data.toString('utf8'));
  } catch {
    throw new RefusedFrame(InvalidRequest.field('frame', 'is not JSON'), undefined);
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame))
    throw new RefusedFrame(InvalidRequest.field('frame', 'must be a JSON object'), undefined);
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
    throw new RefusedFrame(
      new InvalidRequest(`Invalid frame: ${details.map((d) => `${d.field || 'frame'} ${d.message}`).join('; ')}`, details),
      id,
    );
  }
  try {
    if (mayHoldUnstorable(data)) refuseUnstorable(frame, undefined, 'frame');
  } catch (err) {
    throw new RefusedFrame(err as AppError, id);
  }
  return frame as ClientFrame;
}

/** An error as the frame's `error`: typed errors keep their code; storage faults as HTTP maps them; the rest leaks nothing. */
function frameError(err: unknown, log: FastifyBaseLogger): FrameError {
  if (err instanceof RateLimited)
    return { code: err.code, message: err.message, details: { retry_after_seconds: Number(err.headers['Retry-After']) } };
  if (err instanceof AppError)
    return { code: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) };
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
 * GET /messaging/channel, a WebSocket per agent connection: messages pushed as they
 * arrive within the client's credit, and acks, rejects, extends, sends, subscriptions and
 * heartbeats as frames (channel-schemas.ts). Authenticated like any request before the
 * upgrade; each request frame, and each frame refused, spends the caller's rate budget as an
 * HTTP request would. A client that does not read what it is sent stops being read (and
 * closed, 1008, if that lasts); so is one whose key is revoked.
 */
export function channelRoutes(
  deps: ChannelDeps & {
    limiter: RateLimiter;
    logger: Logger;
    maxFrameBytes: number;
    connections: OpenConnections;
    stalledClientMs: number;
  },
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
        const tcp = request.raw.socket;

        // Reading stops while any reason holds: too many frames in progress, or too many bytes
        // sent that the client has not read (it would otherwise be answered without end).
        const pausedFor = new Set<'in_flight' | 'unread'>();
        const pauseFor = (reason: 'in_flight' | 'unread') => {
          if (pausedFor.size === 0) socket.pause();
          pausedFor.add(reason);
        };
        const resumeFor = (reason: 'in_flight' | 'unread') => {
          if (pausedFor.delete(reason) && pausedFor.size === 0 && socket.readyState === socket.OPEN) socket.resume();
        };

        /** Ends the connection for a reason of policy: revoked key, stalled client, refused frames. */
        const endWith = (code: number, reason: string) => {
          if (socket.readyState !== socket.OPEN) return;
          channel.close();
          socket.close(code, reason);
          // The client's closing frame comes after everything it sent before it: that is read
          // and dropped without being parsed (a flood of 8-byte frames, parsed, kept the CPU
          // from every other request for seconds). The connection ends when the client, having
          // read the close, ends its side, else at ws's close timeout (30 s).
          pausedFor.clear();
          tcp.removeAllListeners('data');
          tcp.on('data', () => undefined);
          tcp.resume();
        };

        /** Set while the client has more than MAX_UNREAD_BYTES to read: resolves when it has read them (or the socket closed). */
        let unread: { drained: Promise<void>; done: () => void } | null = null;
        const watchUnread = () => {
          if (unread || socket.bufferedAmount <= MAX_UNREAD_BYTES || socket.readyState !== socket.OPEN) return;
          pauseFor('unread');
          const stalled = setTimeout(() => endWith(POLICY_VIOLATION, 'the client has not read what it was sent'), deps.stalledClientMs);
          let drained!: () => void;
          const done = () => {
            clearTimeout(stalled);
            tcp.off('drain', done);
            unread = null;
            resumeFor('unread');
            drained();
          };
          // The TCP socket's buffer, which holds every byte not yet taken by the client, drains.
          tcp.once('drain', done);
          unread = { drained: new Promise<void>((resolve) => (drained = resolve)), done };
        };

        const send = (frame: unknown) => {
          if (socket.readyState !== socket.OPEN) return;
          socket.send(JSON.stringify(frame));
          watchUnread();
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
            tcp.cork();
            for (const message of messages) send({ message });
            tcp.uncork();
          },
          // Nothing more is leased for a client that has not read what it was pushed.
          () => unread?.drained,
        );
        sockets.add(socket);
        // A revoked key's channel ends like its other connections.
        const unhold = deps.connections.hold(credentialOf(principal), (reason) => endWith(POLICY_VIOLATION, reason));
        if (shutdown.aborted) socket.close(GOING_AWAY, 'server shutting down');

        /** The rate limit's refusal when the caller's budget is spent, else null. */
        const overBudget = async (): Promise<RateLimited | null> => {
          if (!deps.limiter.enabled) return null;
          const decision = await deps.limiter.consume(principal.bucket);
          return decision.allowed ? null : new RateLimited(Math.max(1, Math.ceil((decision.resetAt - Date.now()) / 1000)));
        };

        // A refused frame is answered like any frame, so it spends the rate budget as one; a
        // client that sends nothing else is broken or hostile and is closed.
        let refusedInARow = 0;
        const refuse = (refused: RefusedFrame) => {
          if (++refusedInARow >= MAX_REFUSED_IN_A_ROW)
            return endWith(POLICY_VIOLATION, `${MAX_REFUSED_IN_A_ROW} frames in a row were refused`);
          const id = refused.id === undefined ? {} : { id: refused.id };
          void overBudget().then(
            (limited) => send({ ...id, error: frameError(limited ?? refused.refusal, log) }),
            (err: unknown) => send({ ...id, error: frameError(err, log) }),
          );
        };

        let inFlight = 0;
        const answer = async (frame: ChannelRequest) => {
          const limited = await overBudget();
          if (limited) throw limited;
          return channel.perform(frame);
        };
        socket.on('message', (data, isBinary) => {
          // Closing: what the client still sends before its closing frame is dropped.
          if (socket.readyState !== socket.OPEN) return;
          let frame: ClientFrame;
          try {
            frame = parseFrame(data as Buffer, isBinary, deps.maxFrameBytes);
          } catch (err) {
            return refuse(err as RefusedFrame);
          }
          if ('credit' in frame) {
            try {
              channel.grant(frame.credit);
            } catch (err) {
              return refuse(new RefusedFrame(err as AppError, undefined));
            }
            refusedInARow = 0;
            return;
          }
          refusedInARow = 0;
          // Back-pressure: a client that outruns the database stops being read, not buffered.
          if (++inFlight === MAX_IN_FLIGHT) pauseFor('in_flight');
          answer(frame)
            .then(
              (ok) => send({ id: frame.id, ok }),
              (err: unknown) => send({ id: frame.id, error: frameError(err, log) }),
            )
            .finally(() => {
              if (inFlight-- === MAX_IN_FLIGHT) resumeFor('in_flight');
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
          unhold();
          unread?.done();
          channel.close();
        });
      },
    });
  };
}
