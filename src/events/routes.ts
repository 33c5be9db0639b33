import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { credentialOf } from '../auth/index.js';
import { list } from '../http/reply.js';
import { ListEnvelope, page } from '../http/schemas.js';
import { streamBody } from '../http/stream-body.js';
import type { OpenConnections } from '../kernel/open-connections.js';
import { Event, ListEventsQuery, StreamEventsQuery } from './schemas.js';
import type { Event as EventShape } from './schemas.js';
import type { EventsService } from './service.js';

const tags = ['events'];

/** One event as a Server-Sent Events message (its JSON has no line breaks). */
function sseMessage(event: EventShape): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export function eventsRoutes(
  service: EventsService,
  options: { shutdown: AbortSignal; connections: OpenConnections; stalledClientMs: number },
): FastifyPluginAsyncTypebox {
  const { shutdown, connections } = options;
  return async (app) => {
    // One shutdown listener ends every stream (as messaging's long polls).
    const streams = new Set<() => void>();
    shutdown.addEventListener('abort', () => streams.forEach((end) => end()), { once: true });

    app.get(
      '/events',
      {
        config: { permission: 'events:read' },
        schema: {
          tags,
          summary: 'List events, oldest first, filtered by type patterns, subject and position',
          querystring: ListEventsQuery,
          response: { 200: ListEnvelope(Event) },
        },
      },
      async (request, reply) => {
        const { limit: _limit, offset: _offset, ...query } = request.query;
        const window = page(request.query);
        return list(reply, await service.list(request.principal, query, window), window);
      },
    );

    app.get(
      '/events/stream',
      {
        config: { permission: 'events:read' },
        schema: {
          tags,
          summary: 'Follow events live (Server-Sent Events); resumes after Last-Event-ID (or `after`) without gap or duplicate',
          description:
            'Each event is `id: <event id>`, `event: <type>`, `data: <event JSON>`; a `: keep-alive` comment is sent when nothing happened for a while. 429 when the principal has too many streams open. The stream ends when its API key is revoked, and when the client has read nothing of what it was sent for a while (SWITCHBOARD_STALLED_CLIENT_MS).',
          querystring: StreamEventsQuery,
          response: {
            200: {
              description: 'A text/event-stream of events',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
          },
        },
      },
      async (request, reply) => {
        const header = request.headers['last-event-id'];
        const lastEventId = Array.isArray(header) ? header[0] : header;
        const filter = await service.streamFilter(request.principal, request.query, lastEventId);
        const release = service.openStream(request.principal);
        const stop = new AbortController();
        const end = () => stop.abort();
        streams.add(end);
        // A revoked key's stream ends like its other connections.
        const unhold = connections.hold(credentialOf(request.principal), end);
        if (shutdown.aborted) end();
        const events = service.follow(filter, stop.signal);
        async function* messages() {
          try {
            // Sent at once, so the client knows the stream is open before any event.
            yield ': stream open\n\n';
            for await (const batch of events) yield batch === null ? ': keep-alive\n\n' : batch.map(sseMessage).join('');
          } finally {
            streams.delete(end);
            unhold();
            release();
          }
        }
        const body = streamBody(messages(), { stalledMs: options.stalledClientMs, stop: stop.signal });
        // The client went away: stop following (the generator's finally gives the slot back).
        body.once('close', end);
        reply.raw.once('close', end);
        return reply
          .header('Content-Type', 'text/event-stream; charset=utf-8')
          .header('Cache-Control', 'no-cache')
          .header('X-Accel-Buffering', 'no')
          .send(body);
      },
    );
  };
}
