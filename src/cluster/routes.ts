import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { list } from '../http/reply.js';
import { ListEnvelope, page } from '../http/schemas.js';
import { ClusterNode, ListNodesQuery } from './schemas.js';
import type { ClusterService } from './service.js';

const tags = ['cluster'];

export function clusterRoutes(service: ClusterService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/cluster/nodes',
      {
        config: { permission: 'cluster:read' },
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
