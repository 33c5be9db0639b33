import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { list, ok } from '../../http/reply.js';
import { DataEnvelope, ListEnvelope, page, PageQuery } from '../../http/schemas.js';
import { AccessGroup, GroupParams, MemberParams, Membership, MembershipRemoved } from './schemas.js';
import type { AccessGroupsService } from './service.js';

const tags = ['auth'];

/** Granted group memberships: who may grant access is who may mint keys (`keys:admin`). */
export function accessGroupRoutes(service: AccessGroupsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.put(
      '/auth/groups/:group/members/:agent_id',
      {
        config: { permission: 'keys:admin' },
        schema: {
          tags,
          summary:
            'Grant an agent membership of a group (keys:admin; 201 when new, 200 when it was a member): it then reads what is shared with the group',
          params: MemberParams,
          response: { 200: DataEnvelope(Membership), 201: DataEnvelope(Membership) },
        },
      },
      async (request, reply) => {
        const { membership, created } = await service.grant(request.params.group, request.params.agent_id, request.principal.actor);
        return ok(reply, membership, created ? 201 : 200);
      },
    );

    app.delete(
      '/auth/groups/:group/members/:agent_id',
      {
        config: { permission: 'keys:admin' },
        schema: {
          tags,
          summary: 'Remove an agent from a group (keys:admin; 404 when it is not a member)',
          params: MemberParams,
          response: { 200: DataEnvelope(MembershipRemoved) },
        },
      },
      async (request, reply) => {
        const { group, agent_id } = request.params;
        await service.revoke(group, agent_id);
        return ok(reply, { group, agent_id, deleted: true as const });
      },
    );

    app.get(
      '/auth/groups',
      {
        config: { permission: 'keys:admin' },
        schema: {
          tags,
          summary: 'List the groups with granted members, and their members (keys:admin)',
          querystring: PageQuery,
          response: { 200: ListEnvelope(AccessGroup) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listGroups(window), window);
      },
    );

    app.get(
      '/auth/groups/:group/members',
      {
        config: { permission: 'keys:admin' },
        schema: {
          tags,
          summary: "List a group's granted members (keys:admin)",
          params: GroupParams,
          querystring: PageQuery,
          response: { 200: ListEnvelope(Membership) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listMembers(request.params.group, window), window);
      },
    );
  };
}
