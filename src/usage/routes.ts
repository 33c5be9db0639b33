import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { created, ok } from '../http/reply.js';
import { DataEnvelope } from '../http/schemas.js';
import { RecordUsageBody, UsageQuery, UsageRecord, UsageTotals } from './schemas.js';
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
