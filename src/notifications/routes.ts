import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { accepted, created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page } from '../http/schemas.js';
import {
  Channel,
  ChannelParams,
  CreateChannelBody,
  CreatedChannel,
  ListChannelsQuery,
  NotificationSent,
  UpdateChannelBody,
} from './schemas.js';
import type { NotificationsService } from './service.js';

const tags = ['notifications'];
const config = { permission: 'webhooks:admin' } as const;

export function notificationsRoutes(service: NotificationsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/notifications/channels',
      {
        config,
        schema: {
          tags,
          summary:
            'Create a notification channel: webhook, slack, email or agent (admin); a webhook channel’s answer shows its signing secret, once',
          body: CreateChannelBody,
          response: { 201: DataEnvelope(CreatedChannel) },
        },
      },
      async (request, reply) => created(reply, await service.create(request.body, request.principal.actor)),
    );

    app.get(
      '/notifications/channels',
      {
        config,
        schema: {
          tags,
          summary: 'List notification channels, oldest first (admin)',
          querystring: ListChannelsQuery,
          response: { 200: ListEnvelope(Channel) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.list(window), window);
      },
    );

    app.get(
      '/notifications/channels/:id',
      {
        config,
        schema: { tags, summary: 'Get a notification channel (admin)', params: ChannelParams, response: { 200: DataEnvelope(Channel) } },
      },
      async (request, reply) => ok(reply, await service.get(request.params.id)),
    );

    app.patch(
      '/notifications/channels/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Change a notification channel’s name or config (admin); its type stays',
          params: ChannelParams,
          body: UpdateChannelBody,
          response: { 200: DataEnvelope(Channel) },
        },
      },
      async (request, reply) => ok(reply, await service.update(request.params.id, request.body)),
    );

    app.delete(
      '/notifications/channels/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Delete a notification channel and its delivery log (admin)',
          params: ChannelParams,
          response: { 200: Deleted },
        },
      },
      async (request, reply) => {
        await service.remove(request.params.id);
        return deleted(reply, request.params.id);
      },
    );

    app.post(
      '/notifications/channels/:id/test',
      {
        config,
        schema: {
          tags,
          summary: 'Send a test notification to the channel (admin): queued for delivery, or put into the agent’s inbox',
          params: ChannelParams,
          response: { 202: DataEnvelope(NotificationSent) },
        },
      },
      async (request, reply) => accepted(reply, await service.test(request.params.id, request.principal)),
    );
  };
}
