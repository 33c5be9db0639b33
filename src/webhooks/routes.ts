import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { accepted, created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page } from '../http/schemas.js';
import {
  CreatedWebhook,
  CreateWebhookBody,
  Delivery,
  DeliveryAttempt,
  DeliveryParams,
  ListAttemptsQuery,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  UpdateWebhookBody,
  Webhook,
  WebhookParams,
} from './schemas.js';
import type { WebhooksService } from './service.js';

const tags = ['webhooks'];

export function webhooksRoutes(service: WebhooksService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/webhooks',
      {
        config: { permission: 'webhooks:admin' },
        schema: {
          tags,
          summary: 'Register a webhook for event types (admin); the answer shows its signing secret, once',
          body: CreateWebhookBody,
          response: { 201: DataEnvelope(CreatedWebhook) },
        },
      },
      async (request, reply) => created(reply, await service.create(request.body, request.principal.actor)),
    );

    app.get(
      '/webhooks',
      {
        config: { permission: 'webhooks:admin' },
        schema: {
          tags,
          summary: 'List webhooks, oldest first (admin)',
          querystring: ListWebhooksQuery,
          response: { 200: ListEnvelope(Webhook) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.list(window), window);
      },
    );

    app.get(
      '/webhooks/:id',
      {
        config: { permission: 'webhooks:admin' },
        schema: { tags, summary: 'Get a webhook (admin)', params: WebhookParams, response: { 200: DataEnvelope(Webhook) } },
      },
      async (request, reply) => ok(reply, await service.get(request.params.id)),
    );

    app.patch(
      '/webhooks/:id',
      {
        config: { permission: 'webhooks:admin' },
        schema: {
          tags,
          summary: 'Change a webhook’s url, types or description, or disable or re-enable it (admin)',
          params: WebhookParams,
          body: UpdateWebhookBody,
          response: { 200: DataEnvelope(Webhook) },
        },
      },
      async (request, reply) => ok(reply, await service.update(request.params.id, request.body, request.principal)),
    );

    app.delete(
      '/webhooks/:id',
      {
        config: { permission: 'webhooks:admin' },
        schema: { tags, summary: 'Delete a webhook and its delivery log (admin)', params: WebhookParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        await service.remove(request.params.id);
        return deleted(reply, request.params.id);
      },
    );

    app.get(
      '/webhooks/:id/deliveries',
      {
        config: { permission: 'webhooks:admin' },
        schema: {
          tags,
          summary:
            'A webhook’s (or a webhook, slack or email notification channel’s) deliveries, newest first, with each one’s last attempt (admin)',
          params: WebhookParams,
          querystring: ListDeliveriesQuery,
          response: { 200: ListEnvelope(Delivery) },
        },
      },
      async (request, reply) => {
        const { limit: _limit, offset: _offset, ...filter } = request.query;
        const window = page(request.query);
        return list(reply, await service.deliveries(request.params.id, filter, window), window);
      },
    );

    app.get(
      '/webhooks/:id/deliveries/:delivery_id/attempts',
      {
        config: { permission: 'webhooks:admin' },
        schema: {
          tags,
          summary: 'A delivery’s attempts, oldest first: status, latency and error of each (admin)',
          params: DeliveryParams,
          querystring: ListAttemptsQuery,
          response: { 200: ListEnvelope(DeliveryAttempt) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.attempts(request.params.id, request.params.delivery_id, window), window);
      },
    );

    app.post(
      '/webhooks/:id/test',
      {
        config: { permission: 'webhooks:admin', conflict: 'The webhook is disabled' },
        schema: {
          tags,
          summary: 'Send a webhook.test event to this webhook (admin); 409 while it is disabled',
          params: WebhookParams,
          response: { 202: DataEnvelope(Delivery) },
        },
      },
      async (request, reply) => accepted(reply, await service.test(request.params.id, request.principal)),
    );

    app.post(
      '/webhooks/:id/deliveries/:delivery_id/retry',
      {
        config: { permission: 'webhooks:admin', conflict: 'The webhook is disabled, or the delivery was delivered already' },
        schema: {
          tags,
          summary: 'Attempt a pending or failed delivery again at once (admin); 409 once delivered or while the webhook is disabled',
          params: DeliveryParams,
          response: { 202: DataEnvelope(Delivery) },
        },
      },
      async (request, reply) => accepted(reply, await service.retry(request.params.id, request.params.delivery_id)),
    );
  };
}
