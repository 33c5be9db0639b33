import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireAdmin } from '../auth/index.js';
import { list } from '../http/reply.js';
import { ListEnvelope, page } from '../http/schemas.js';
import { ClusterNode, ListNodesQuery } from './schemas.js';
import type { ClusterService } from './service.js';

const tags = ['cluster'];

export function clusterRoutes(service: ClusterService): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Admin only: host names and pids are the operator's business. preValidation, so signed
    // requests have their principal and an agent learns nothing from validation errors.
    app.addHook('preValidation', async (request) => requireAdmin(request.principal));

    app.get(
      '/cluster/nodes',
      {
        schema: {
          tags,
          summary: 'The servers on this database, up (heartbeat within 30 s) or down (admin)',
          querystring: ListNodesQuery,
          response: { 200: ListEnvelope(ClusterNode) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.list(window), window);
      },
    );
  };
}
