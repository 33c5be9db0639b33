import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { actingAgent, assertActsAs } from '../auth/index.js';
import { created, deleted, list, ok, okWithMeta } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page, PageQuery } from '../http/schemas.js';
import {
  AgentDeleted,
  AgentParams,
  Capability,
  CapabilityParams,
  Group,
  GroupMember,
  GroupParams,
  HealthRecord,
  HeartbeatBody,
  ListCapabilitiesQuery,
  LookupEnvelope,
  LookupQuery,
  RegisterBody,
  SearchBody,
  SearchEnvelope,
} from './schemas.js';
import type { DiscoveryService } from './service.js';

const tags = ['discovery'];

export function discoveryRoutes(service: DiscoveryService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/discovery/capabilities',
      {
        config: { permission: 'discovery:write' },
        schema: {
          tags,
          summary: "Register a capability for an agent (201), or update the agent's capability of that name (200)",
          body: RegisterBody,
          response: { 200: DataEnvelope(Capability), 201: DataEnvelope(Capability) },
        },
      },
      async (request, reply) => {
        const agentId = actingAgent(request.principal, request.body.agent_id);
        const result = await service.register(agentId, request.body, request.principal.actor);
        return result.created ? created(reply, result.capability) : ok(reply, result.capability);
      },
    );

    app.get(
      '/discovery/capabilities',
      {
        config: { permission: 'discovery:read' },
        schema: {
          tags,
          summary: 'List capabilities, by agent, name (text.* wildcard) or group',
          querystring: ListCapabilitiesQuery,
          response: { 200: ListEnvelope(Capability) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listCapabilities(request.query, window), window);
      },
    );

    app.get(
      '/discovery/capabilities/:capability_id',
      {
        config: { permission: 'discovery:read' },
        schema: { tags, summary: 'Get a capability', params: CapabilityParams, response: { 200: DataEnvelope(Capability) } },
      },
      async (request, reply) => ok(reply, await service.getCapability(request.params.capability_id)),
    );

    app.delete(
      '/discovery/capabilities/:capability_id',
      {
        config: { permission: 'discovery:write' },
        schema: { tags, summary: 'Remove a capability (its agent or an admin)', params: CapabilityParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        await service.deleteCapability(request.principal, request.params.capability_id);
        return deleted(reply, request.params.capability_id);
      },
    );

    app.delete(
      '/discovery/agents/:agent_id',
      {
        config: { permission: 'discovery:write' },
        schema: {
          tags,
          summary: 'Deregister an agent: remove all its capabilities and its heartbeat record',
          params: AgentParams,
          response: { 200: DataEnvelope(AgentDeleted) },
        },
      },
      async (request, reply) => {
        assertActsAs(request.principal, request.params.agent_id);
        const removed = await service.deleteAgent(request.params.agent_id, request.principal.actor);
        return ok(reply, { id: request.params.agent_id, deleted: true as const, capabilities_removed: removed });
      },
    );

    app.get(
      '/discovery/agents',
      {
        config: { permission: 'discovery:read' },
        schema: {
          tags,
          summary:
            'Look up agents by capability (text.* wildcard) and group, one entry per agent, ordered by a routing strategy; pages with limit and offset',
          querystring: LookupQuery,
          response: { 200: LookupEnvelope },
        },
      },
      async (request, reply) => {
        const { agents, strategy, total } = await service.lookupAgents(request.query);
        const window = page(request.query);
        return okWithMeta(reply, { agents }, { strategy, total, limit: window.limit, offset: window.offset });
      },
    );

    app.post(
      '/discovery/heartbeat',
      {
        config: { permission: 'discovery:write' },
        schema: {
          tags,
          summary: "Report an agent's liveness and load (0..1); returns its health record",
          body: HeartbeatBody,
          response: { 200: DataEnvelope(HealthRecord) },
        },
      },
      async (request, reply) => {
        const agentId = actingAgent(request.principal, request.body.agent_id);
        return ok(reply, await service.heartbeat(agentId, request.body));
      },
    );

    app.get(
      '/discovery/agents/:agent_id/health',
      {
        config: { permission: 'discovery:read' },
        schema: {
          tags,
          summary: "An agent's health, computed from its last heartbeat and the TTL",
          params: AgentParams,
          response: { 200: DataEnvelope(HealthRecord) },
        },
      },
      async (request, reply) => ok(reply, await service.health(request.params.agent_id)),
    );

    app.get(
      '/discovery/groups',
      {
        config: { permission: 'discovery:read' },
        schema: { tags, summary: 'List groups with their agent counts', querystring: PageQuery, response: { 200: ListEnvelope(Group) } },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listGroups(window), window);
      },
    );

    app.get(
      '/discovery/groups/:group_name/agents',
      {
        config: { permission: 'discovery:read' },
        schema: {
          tags,
          summary: 'List the agents of a group with their capabilities in it and their health',
          params: GroupParams,
          querystring: PageQuery,
          response: { 200: ListEnvelope(GroupMember) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.groupAgents(request.params.group_name, window), window);
      },
    );

    app.post(
      '/discovery/search',
      {
        config: { permission: 'discovery:read' },
        schema: {
          tags,
          summary: 'Find capabilities by a natural-language description, best first (similarity 0..1)',
          body: SearchBody,
          response: { 200: SearchEnvelope },
        },
      },
      async (request, reply) => {
        const { results, ranker } = await service.searchCapabilities(request.body);
        return okWithMeta(reply, { results }, { ranker });
      },
    );
  };
}
