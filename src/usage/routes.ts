import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page } from '../http/schemas.js';
import type { BudgetsService } from './budgets.js';
import {
  Budget,
  BudgetListQuery,
  BudgetParams,
  CreateBudgetBody,
  RecordUsageBody,
  ScopePause,
  UpdateBudgetBody,
  UsageQuery,
  UsageRecord,
  UsageTotals,
} from './schemas.js';
import type { UsageService } from './service.js';

const tags = ['usage'];

export function usageRoutes(service: UsageService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/usage',
      {
        config: { permission: 'usage:write' },
        schema: {
          tags,
          summary: 'Record usage outside an acknowledgement (an agent key records its own)',
          body: RecordUsageBody,
          response: { 201: DataEnvelope(UsageRecord) },
        },
      },
      async (request, reply) => created(reply, await service.recordOwn(request.principal, request.body)),
    );

    app.get(
      '/usage',
      {
        config: { permission: 'usage:read' },
        schema: {
          tags,
          summary: 'Usage totals by agent, capability, plan, run, model or day, the costliest first',
          querystring: UsageQuery,
          response: { 200: DataEnvelope(UsageTotals) },
        },
      },
      async (request, reply) => ok(reply, await service.totals(request.query)),
    );
  };
}

const budgetTags = ['budgets'];
const admin = { permission: 'budgets:admin' } as const;

export function budgetRoutes(service: BudgetsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/budgets',
      {
        config: admin,
        schema: { tags: budgetTags, summary: 'Create a budget (admin)', body: CreateBudgetBody, response: { 201: DataEnvelope(Budget) } },
      },
      async (request, reply) => created(reply, await service.create(request.body, request.principal.actor)),
    );

    app.get(
      '/budgets',
      {
        config: admin,
        schema: {
          tags: budgetTags,
          summary: 'List budgets with their current period, oldest first (admin); state=paused: only those pausing their scope',
          querystring: BudgetListQuery,
          response: { 200: ListEnvelope(Budget) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.list(window, request.query.state === 'paused'), window);
      },
    );

    app.get(
      '/budgets/pauses',
      {
        // Whoever reads plans sees their steps wait: they may know what pauses them, not the budgets' limits.
        config: { permission: 'plans:read' },
        schema: {
          tags: budgetTags,
          summary: 'What budgets pause now (every agent, agents, capabilities, plans), each with its budget and end',
          response: { 200: DataEnvelope(Type.Array(ScopePause)) },
        },
      },
      async (_request, reply) => ok(reply, await service.current()),
    );

    app.get(
      '/budgets/:id',
      {
        config: admin,
        schema: { tags: budgetTags, summary: 'Get a budget (admin)', params: BudgetParams, response: { 200: DataEnvelope(Budget) } },
      },
      async (request, reply) => ok(reply, await service.get(request.params.id)),
    );

    app.patch(
      '/budgets/:id',
      {
        config: admin,
        schema: {
          tags: budgetTags,
          summary: 'Change a budget (admin): a limit raised above what the period spent resumes what it paused',
          params: BudgetParams,
          body: UpdateBudgetBody,
          response: { 200: DataEnvelope(Budget) },
        },
      },
      async (request, reply) => ok(reply, await service.update(request.params.id, request.body, request.principal.actor)),
    );

    app.delete(
      '/budgets/:id',
      {
        config: admin,
        schema: {
          tags: budgetTags,
          summary: 'Delete a budget (admin); what it paused resumes',
          params: BudgetParams,
          response: { 200: Deleted },
        },
      },
      async (request, reply) => {
        await service.remove(request.params.id);
        return deleted(reply, request.params.id);
      },
    );

    app.post(
      '/budgets/:id/resume',
      {
        config: admin,
        schema: {
          tags: budgetTags,
          summary: 'Resume what a budget paused (its agent, capability, plan or everything), for the rest of the period (admin)',
          params: BudgetParams,
          response: { 200: DataEnvelope(Budget) },
        },
      },
      async (request, reply) => ok(reply, await service.resume(request.params.id, request.principal.actor)),
    );
  };
}
