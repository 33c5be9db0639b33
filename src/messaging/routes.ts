import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { actingAgent } from '../auth/index.js';
import { created, deleted, list, ok } from '../http/reply.js';
import { streamedJsonBody, type OffloadPath } from '../http/json-offload.js';
import { DataEnvelope, Deleted, ListEnvelope, page, PageQuery, ReasonBody } from '../http/schemas.js';
import {
  AcknowledgeBody,
  Acknowledged,
  AgentQuery,
  DeadLettersQuery,
  DeadLetter,
  ExtendBody,
  Inbox,
  InboxMessage,
  InboxMessagesQuery,
  InboxParams,
  LeaseExtended,
  MessageParams,
  Message,
  Published,
  PublishBody,
  RateLimitQuery,
  RateLimitStatus,
  Received,
  ReceiveQuery,
  RejectBody,
  Rejected,
  SendBatchBody,
  SendBody,
  Sent,
  SentBatch,
  Session,
  SessionBody,
  SessionParams,
  SubscribeBody,
  Subscription,
  SubscriptionParams,
  Thread,
  ThreadBody,
  ThreadParams,
} from './schemas.js';
import { DEFAULT_VISIBILITY_S, MAX_BATCH, MAX_WAIT_S, type InboxService } from './inbox.js';
import { callerOf } from './messages.js';
import type { PayloadRefs } from './payload-refs.js';
import type { SubscriptionsService } from './subscriptions.js';
import type { ThreadsService } from './threads.js';

const tags = ['messaging'];

export function messagingRoutes(
  {
    inbox,
    threads,
    subscriptions,
    payloads,
  }: { inbox: InboxService; threads: ThreadsService; subscriptions: SubscriptionsService; payloads: PayloadRefs },
  shutdown: AbortSignal,
  /** The body limit of the routes that take payloads (those over the inline limit become artifacts). */
  payloadBodyBytes: number,
): FastifyPluginAsyncTypebox {
  return async (app) => {
    // One shutdown listener ends every long poll: a listener each cost a walk over all the others
    // on every add and remove (an AbortSignal's list), quadratic with 2,000 polls opening.
    const longPolls = new Set<() => void>();
    // Large payloads and outputs go to storage as their bodies arrive, never parsed into memory whole.
    const streamed = (paths: OffloadPath[]) => streamedJsonBody({ paths, inlineBytes: payloads.inlineLimit, stage: () => payloads.stager });
    const streamedPayload = streamed([['payload']]);
    const streamedBatch = streamed([['messages', 'payload']]);
    const streamedOutput = streamed([['output']]);
    shutdown.addEventListener('abort', () => longPolls.forEach((abort) => abort()), { once: true });

    app.post(
      '/messaging/send',
      {
        bodyLimit: payloadBodyBytes,
        ...streamedPayload,
        config: {
          permission: 'messaging:write',
          conflict: "In a turn-mode thread, it is another participant's turn, or another message took this turn",
        },
        schema: {
          tags,
          summary: 'Send a message to an agent (source is the caller)',
          body: SendBody,
          response: { 200: DataEnvelope(Sent), 201: DataEnvelope(Sent) },
        },
      },
      async (request, reply) => {
        const { messages, replayed } = await inbox.send({
          from: callerOf(request.principal),
          messages: [request.body],
          traceparent: request.headers.traceparent as string | undefined,
        });
        const sent = messages[0]!;
        if (replayed) return ok(reply.header('Idempotent-Replayed', 'true'), sent);
        return created(reply, sent);
      },
    );

    app.post(
      '/messaging/send-batch',
      {
        bodyLimit: payloadBodyBytes,
        ...streamedBatch,
        config: {
          permission: 'messaging:write',
          conflict: "In a turn-mode thread, it is another participant's turn, or another message took this turn",
        },
        schema: {
          tags,
          summary: 'Send up to 500 messages at once, all or nothing',
          body: SendBatchBody,
          response: { 201: DataEnvelope(SentBatch) },
        },
      },
      async (request, reply) =>
        created(reply, {
          messages: (await inbox.send({ from: callerOf(request.principal), messages: request.body.messages, batch: true })).messages,
        }),
    );

    app.get(
      '/messaging/receive',
      {
        config: { permission: 'messaging:read' },
        schema: {
          tags,
          summary: "Receive (long-poll) messages from an agent's inbox; each is leased for visibility_timeout",
          querystring: ReceiveQuery,
          response: { 200: DataEnvelope(Received) },
        },
      },
      async (request, reply) => {
        const agentId = actingAgent(request.principal, request.query.agent_id);
        // The wait ends early when the client goes away or the server shuts down. The listeners
        // go when the receive ends: every request closes, and an abort then would only build a
        // DOMException (a stack trace) for nobody; AbortSignal.any cost as much again (profiled).
        const stop = new AbortController();
        const abort = () => stop.abort();
        request.raw.once('close', abort);
        longPolls.add(abort);
        if (shutdown.aborted) abort();
        try {
          const messages = await inbox.receive(
            callerOf(request.principal),
            agentId,
            {
              waitSeconds: Math.min(request.query.timeout ?? 0, MAX_WAIT_S),
              max: Math.min(request.query.max ?? 10, MAX_BATCH),
              visibilitySeconds: request.query.visibility_timeout ?? DEFAULT_VISIBILITY_S,
            },
            stop.signal,
          );
          return ok(reply, { messages });
        } finally {
          request.raw.off('close', abort);
          longPolls.delete(abort);
        }
      },
    );

    app.post(
      '/messaging/acknowledge',
      {
        bodyLimit: payloadBodyBytes,
        ...streamedOutput,
        config: { permission: 'messaging:write', conflict: 'A message is settled already or has not been received' },
        schema: {
          tags,
          summary: 'Acknowledge received messages (done); output is kept for the producer, usage (one message) recorded',
          body: AcknowledgeBody,
          response: { 200: DataEnvelope(Acknowledged) },
        },
      },
      async (request, reply) => {
        const body = request.body;
        const caller = callerOf(request.principal);
        const result =
          'message_ids' in body
            ? await inbox.acknowledge(caller, body.message_ids)
            : await inbox.acknowledge(caller, [body.message_id], body.output, body.usage && new Map([[body.message_id, body.usage]]));
        return ok(reply, result);
      },
    );

    app.post(
      '/messaging/reject',
      {
        config: { permission: 'messaging:write', conflict: 'The message is settled already or has not been received' },
        schema: {
          tags,
          summary: 'Reject a received message: redelivered after backoff, or dead-lettered',
          body: RejectBody,
          response: {
            200: DataEnvelope(Rejected),
          },
        },
      },
      async (request, reply) => ok(reply, await inbox.reject(callerOf(request.principal), request.body)),
    );

    app.post(
      '/messaging/extend',
      {
        config: {
          permission: 'messaging:write',
          conflict: 'The message is settled already, has not been received, or its lease has expired',
        },
        schema: {
          tags,
          summary: 'Extend the lease of a received message (long work)',
          body: ExtendBody,
          response: { 200: DataEnvelope(LeaseExtended) },
        },
      },
      async (request, reply) =>
        ok(reply, await inbox.extend(callerOf(request.principal), request.body.message_id, request.body.visibility_timeout)),
    );

    app.get(
      '/messaging/dead-letters',
      {
        config: { permission: 'messaging:read' },
        schema: {
          tags,
          summary: 'Dead-lettered messages with every delivery attempt',
          querystring: DeadLettersQuery,
          response: { 200: ListEnvelope(DeadLetter) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await inbox.listDeadLetters(callerOf(request.principal), request.query.agent_id, window), window);
      },
    );

    app.get(
      '/messaging/inboxes',
      {
        config: { permission: 'messaging:read' },
        schema: {
          tags,
          summary:
            'Inboxes holding messages, by agent: pending, leased and dead-lettered counts (an agent: its own; with agent_id: that inbox, even empty)',
          querystring: AgentQuery,
          response: { 200: ListEnvelope(Inbox) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await inbox.listInboxes(callerOf(request.principal), request.query.agent_id, window), window);
      },
    );

    app.get(
      '/messaging/inboxes/:agent_id/messages',
      {
        config: { permission: 'messaging:read' },
        schema: {
          tags,
          summary: "Look at an agent's pending or leased messages, in inbox order, without leasing them",
          params: InboxParams,
          querystring: InboxMessagesQuery,
          response: { 200: ListEnvelope(InboxMessage) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        const state = request.query.state ?? 'pending';
        return list(reply, await inbox.inboxMessages(callerOf(request.principal), request.params.agent_id, state, window), window);
      },
    );

    app.post(
      '/messaging/dead-letters/:message_id/redrive',
      {
        config: {
          permission: 'messaging:write',
          conflict: "The message is not dead-lettered, or it is a plan step's whose run was cancelled",
        },
        schema: {
          tags,
          summary:
            "Put a dead letter back in the inbox as a new message linked to it; a plan step's letter that failed its run continues the run",
          params: MessageParams,
          body: Type.Optional(ReasonBody),
          response: { 201: DataEnvelope(Message) },
        },
      },
      async (request, reply) =>
        created(reply, await inbox.redrive(callerOf(request.principal), request.params.message_id, request.body?.reason)),
    );

    app.post(
      '/messaging/sessions',
      {
        config: { permission: 'messaging:write' },
        schema: { tags, summary: 'Create a session', body: SessionBody, response: { 201: DataEnvelope(Session) } },
      },
      async (request, reply) => created(reply, await threads.createSession(callerOf(request.principal), request.body)),
    );

    app.get(
      '/messaging/sessions',
      {
        config: { permission: 'messaging:read' },
        schema: { tags, summary: 'List sessions', querystring: PageQuery, response: { 200: ListEnvelope(Session) } },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await threads.listSessions(window), window);
      },
    );

    app.get(
      '/messaging/sessions/:session_id',
      {
        config: { permission: 'messaging:read' },
        schema: { tags, summary: 'Get a session', params: SessionParams, response: { 200: DataEnvelope(Session) } },
      },
      async (request, reply) => ok(reply, await threads.getSession(request.params.session_id)),
    );

    app.post(
      '/messaging/threads',
      {
        config: { permission: 'messaging:write' },
        schema: { tags, summary: 'Create a thread in a session', body: ThreadBody, response: { 201: DataEnvelope(Thread) } },
      },
      async (request, reply) => created(reply, await threads.createThread(callerOf(request.principal), request.body)),
    );

    app.get(
      '/messaging/threads/:thread_id',
      {
        config: { permission: 'messaging:read' },
        schema: { tags, summary: 'Get a thread (participants and admins)', params: ThreadParams, response: { 200: DataEnvelope(Thread) } },
      },
      async (request, reply) => ok(reply, await threads.getThread(callerOf(request.principal), request.params.thread_id)),
    );

    app.get(
      '/messaging/threads/:thread_id/messages',
      {
        config: { permission: 'messaging:read' },
        schema: {
          tags,
          summary: 'Messages of a thread, in the order they were sent',
          params: ThreadParams,
          querystring: PageQuery,
          response: { 200: ListEnvelope(Message) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await threads.threadMessages(callerOf(request.principal), request.params.thread_id, window), window);
      },
    );

    app.post(
      '/messaging/publish',
      {
        bodyLimit: payloadBodyBytes,
        ...streamedPayload,
        config: { permission: 'messaging:write' },
        schema: {
          tags,
          summary: 'Publish to a topic: one message per subscriber',
          body: PublishBody,
          response: { 201: DataEnvelope(Published) },
        },
      },
      async (request, reply) => {
        const { topic, payload, ...flow } = request.body;
        return created(reply, await subscriptions.publish(callerOf(request.principal), topic, payload ?? {}, flow));
      },
    );

    app.post(
      '/messaging/subscribe',
      {
        config: { permission: 'messaging:write' },
        schema: {
          tags,
          summary: 'Subscribe an agent to a topic or pattern (idempotent)',
          body: SubscribeBody,
          response: { 200: DataEnvelope(Subscription), 201: DataEnvelope(Subscription) },
        },
      },
      async (request, reply) => {
        const { subscription, created: isNew } = await subscriptions.subscribe(
          callerOf(request.principal),
          request.body.agent_id,
          request.body.topic,
        );
        return isNew ? created(reply, subscription) : ok(reply, subscription);
      },
    );

    app.get(
      '/messaging/subscriptions',
      {
        config: { permission: 'messaging:read' },
        schema: { tags, summary: "List an agent's subscriptions", querystring: AgentQuery, response: { 200: ListEnvelope(Subscription) } },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await subscriptions.listSubscriptions(callerOf(request.principal), request.query.agent_id, window), window);
      },
    );

    app.delete(
      '/messaging/subscriptions/:subscription_id',
      {
        config: { permission: 'messaging:write' },
        schema: { tags, summary: 'Unsubscribe', params: SubscriptionParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        await subscriptions.unsubscribe(callerOf(request.principal), request.params.subscription_id);
        return deleted(reply, request.params.subscription_id);
      },
    );

    app.get(
      '/messaging/rate-limit',
      {
        config: { permission: 'messaging:read' },
        schema: {
          tags,
          summary: "An agent's request budget",
          querystring: RateLimitQuery,
          response: { 200: DataEnvelope(RateLimitStatus) },
        },
      },
      async (request, reply) => {
        const agentId = actingAgent(request.principal, request.query.agent_id);
        return ok(reply, await inbox.rateLimit(callerOf(request.principal), agentId));
      },
    );
  };
}
