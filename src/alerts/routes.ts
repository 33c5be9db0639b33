import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page } from '../http/schemas.js';
import {
  Alert,
  CreateRuleBody,
  ListAlertsQuery,
  ListRulesQuery,
  Preview,
  PreviewBody,
  Rule,
  RuleParams,
  UpdateRuleBody,
} from './schemas.js';
import type { AlertsService } from './service.js';

const tags = ['alerts'];
const admin = { permission: 'webhooks:admin' } as const;
const read = { permission: 'events:read' } as const;

export function alertsRoutes(service: AlertsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/alerts/rules',
      {
        config: admin,
        schema: { tags, summary: 'Create an alert rule (admin)', body: CreateRuleBody, response: { 201: DataEnvelope(Rule) } },
      },
      async (request, reply) => created(reply, await service.createRule(request.body, request.principal.actor)),
    );

    app.get(
      '/alerts/rules',
      {
        config: admin,
        schema: {
          tags,
          summary: 'List alert rules, oldest first (admin)',
          querystring: ListRulesQuery,
          response: { 200: ListEnvelope(Rule) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listRules(window), window);
      },
    );

    app.post(
      '/alerts/rules/preview',
      {
        config: admin,
        schema: {
          tags,
          summary: 'Preview a condition (admin): what it measures now and, for event_count, what it would have matched over the last hour',
          body: PreviewBody,
          response: { 200: DataEnvelope(Preview) },
        },
      },
      async (request, reply) => ok(reply, await service.preview(request.body.condition)),
    );

    app.get(
      '/alerts/rules/:id',
      { config: admin, schema: { tags, summary: 'Get an alert rule (admin)', params: RuleParams, response: { 200: DataEnvelope(Rule) } } },
      async (request, reply) => ok(reply, await service.getRule(request.params.id)),
    );

    app.patch(
      '/alerts/rules/:id',
      {
        config: admin,
        schema: {
          tags,
          summary: 'Change an alert rule (admin): its condition, channels, repeat interval, enabled, or a silence until a time',
          params: RuleParams,
          body: UpdateRuleBody,
          response: { 200: DataEnvelope(Rule) },
        },
      },
      async (request, reply) => ok(reply, await service.updateRule(request.params.id, request.body)),
    );

    app.delete(
      '/alerts/rules/:id',
      {
        config: admin,
        schema: { tags, summary: 'Delete an alert rule and its alerts (admin)', params: RuleParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        await service.removeRule(request.params.id);
        return deleted(reply, request.params.id);
      },
    );

    app.get(
      '/alerts',
      {
        config: read,
        schema: {
          tags,
          summary: 'List alerts, newest first (not for agent keys)',
          querystring: ListAlertsQuery,
          response: { 200: ListEnvelope(Alert) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listAlerts(request.principal, request.query, window), window);
      },
    );

    app.get(
      '/alerts/:id',
      {
        config: read,
        schema: { tags, summary: 'Get an alert (not for agent keys)', params: RuleParams, response: { 200: DataEnvelope(Alert) } },
      },
      async (request, reply) => ok(reply, await service.getAlert(request.principal, request.params.id)),
    );

    app.post(
      '/alerts/:id/acknowledge',
      {
        config: admin,
        schema: {
          tags,
          summary: 'Acknowledge a firing alert (admin): no more repeats; its resolution is still told',
          params: RuleParams,
          response: { 200: DataEnvelope(Alert) },
        },
      },
      async (request, reply) => ok(reply, await service.acknowledge(request.params.id, request.principal)),
    );
  };
}
