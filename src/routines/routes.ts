import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { accepted, created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page, PageQuery } from '../http/schemas.js';
import {
  CreateRoutineBody,
  Execution,
  Fire,
  ListExecutionsQuery,
  ListRoutinesQuery,
  PreviewQuery,
  Routine,
  RoutineParams,
  TokenParams,
  TriggerBody,
  UpdateRoutineBody,
  WebhookFired,
  WebhookToken,
} from './schemas.js';
import type { RoutinesService, WebhookRoutine } from './service.js';

const tags = ['routines'];

export function routinesRoutes(service: RoutinesService): FastifyPluginAsyncTypebox {
  return async (app) => {
    // The routine each webhook request's token named, found before its body was read.
    const webhooks = new WeakMap<FastifyRequest, WebhookRoutine>();
    app.get(
      '/routines',
      {
        config: { permission: 'routines:read' },
        schema: { tags, summary: 'List routines', querystring: ListRoutinesQuery, response: { 200: ListEnvelope(Routine) } },
      },
      async (request, reply) => {
        const window = page(request.query);
        const { trigger_type, enabled, last_status } = request.query;
        return list(reply, await service.list({ trigger_type, enabled, last_status }, window), window);
      },
    );

    app.post(
      '/routines',
      {
        config: { permission: 'routines:write' },
        schema: { tags, summary: 'Create a routine', body: CreateRoutineBody, response: { 201: DataEnvelope(Routine) } },
      },
      async (request, reply) => created(reply, await service.create(request.body, request.principal.actor)),
    );

    app.get(
      '/routines/:id',
      {
        config: { permission: 'routines:read' },
        schema: { tags, summary: 'Get a routine', params: RoutineParams, response: { 200: DataEnvelope(Routine) } },
      },
      async (request, reply) => ok(reply, await service.get(request.params.id)),
    );

    app.patch(
      '/routines/:id',
      {
        config: { permission: 'routines:write' },
        schema: {
          tags,
          summary: 'Update a routine (enabled=false pauses, true resumes)',
          params: RoutineParams,
          body: UpdateRoutineBody,
          response: { 200: DataEnvelope(Routine) },
        },
      },
      async (request, reply) => ok(reply, await service.update(request.params.id, request.body, request.principal)),
    );

    app.delete(
      '/routines/:id',
      {
        config: { permission: 'routines:write' },
        schema: { tags, summary: 'Delete a routine with its history', params: RoutineParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        await service.delete(request.params.id, request.principal);
        return deleted(reply, request.params.id);
      },
    );

    app.post(
      '/routines/:id/trigger',
      {
        config: { permission: 'routines:write', conflict: 'The routine is paused' },
        schema: {
          tags,
          summary: 'Run a routine now, regardless of its schedule',
          params: RoutineParams,
          body: Type.Optional(TriggerBody),
          response: { 202: DataEnvelope(Execution) },
        },
      },
      async (request, reply) =>
        accepted(
          reply,
          await service.trigger(
            request.params.id,
            { payload: request.body?.payload, reason: request.body?.reason },
            request.principal.actor,
          ),
        ),
    );

    app.post(
      '/routines/:id/rotate-token',
      {
        config: { permission: 'routines:write', conflict: 'The routine is no webhook routine' },
        schema: {
          tags,
          summary: 'Issue a new webhook token (the old one stops working)',
          params: RoutineParams,
          response: { 200: DataEnvelope(WebhookToken) },
        },
      },
      async (request, reply) => ok(reply, await service.rotateToken(request.params.id, request.principal)),
    );

    app.get(
      '/routines/:id/preview',
      {
        config: { permission: 'routines:read', conflict: 'The routine is a webhook routine: it has no schedule' },
        schema: {
          tags,
          summary: 'Upcoming fire times of a cron routine',
          params: RoutineParams,
          querystring: PreviewQuery,
          response: { 200: DataEnvelope(Type.Array(Type.String({ format: 'date-time' }))) },
        },
      },
      async (request, reply) => ok(reply, await service.preview(request.params.id, request.query.count ?? 10)),
    );

    app.get(
      '/routines/:id/fires',
      {
        config: { permission: 'routines:read' },
        schema: {
          tags,
          summary: 'The fire ledger of a cron routine, newest first (fired and skipped slots)',
          params: RoutineParams,
          querystring: PageQuery,
          response: { 200: ListEnvelope(Fire) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listFires(request.params.id, window), window);
      },
    );

    app.post(
      '/routines/webhook/:token',
      {
        config: { public: true, conflict: 'The routine is paused' },
        // The token is looked up before the body is read: a caller without a valid one holds no memory.
        onRequest: async (request) => {
          webhooks.set(request, await service.webhookRoutine(request.params.token));
        },
        schema: {
          tags,
          summary: 'Fire a webhook routine (no auth header: the token authenticates); the JSON body becomes the payload',
          params: TokenParams,
          security: [],
          response: { 202: DataEnvelope(WebhookFired) },
        },
      },
      async (request, reply) => accepted(reply, await service.invokeWebhook(webhooks.get(request)!, request.body)),
    );

    app.get(
      '/routines/:id/executions',
      {
        config: { permission: 'routines:read' },
        schema: {
          tags,
          summary: "A routine's executions, newest first",
          params: RoutineParams,
          querystring: ListExecutionsQuery,
          response: { 200: ListEnvelope(Execution) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listExecutions(request.params.id, request.query.status, window), window);
      },
    );

    app.get(
      '/routines/executions/:id',
      {
        config: { permission: 'routines:read' },
        schema: { tags, summary: 'Get an execution', params: RoutineParams, response: { 200: DataEnvelope(Execution) } },
      },
      async (request, reply) => ok(reply, await service.getExecution(request.params.id)),
    );

    app.delete(
      '/routines/executions/:id',
      {
        config: { permission: 'routines:write' },
        schema: { tags, summary: 'Delete an execution record', params: RoutineParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        await service.deleteExecution(request.params.id, request.principal);
        return deleted(reply, request.params.id);
      },
    );
  };
}
