import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page } from '../http/schemas.js';
import { assertActsAs, requireAdmin } from './principal.js';
import {
  AddPublicKeyBody,
  AgentKeyParams,
  AgentParams,
  ApiKey,
  CreatedKey,
  CreateKeyBody,
  KeyParams,
  RevokeKeyQuery,
  RevokedKey,
  ListKeysQuery,
  PublicKey,
  WhoAmI,
} from './schemas.js';
import type { AuthService } from './service.js';

const tags = ['auth'];

export function authRoutes(service: AuthService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/auth/whoami',
      { schema: { tags, summary: 'The principal behind the credentials', response: { 200: DataEnvelope(WhoAmI) } } },
      async (request, reply) => {
        const p = request.principal;
        return ok(reply, { role: p.role, agent_id: p.agentId, key_id: p.keyId, actor: p.actor });
      },
    );

    app.post(
      '/auth/keys',
      {
        schema: {
          tags,
          summary: 'Create an API key (admin)',
          body: CreateKeyBody,
          response: { 201: DataEnvelope(CreatedKey) },
        },
      },
      async (request, reply) => {
        requireAdmin(request.principal);
        return created(reply, await service.createKey(request.body, request.principal.actor));
      },
    );

    app.get(
      '/auth/keys',
      { schema: { tags, summary: 'List API keys (admin)', querystring: ListKeysQuery, response: { 200: ListEnvelope(ApiKey) } } },
      async (request, reply) => {
        requireAdmin(request.principal);
        const window = page(request.query);
        return list(reply, await service.listKeys(window, { includeRevoked: request.query.include_revoked }), window);
      },
    );

    app.delete(
      '/auth/keys/:key_id',
      {
        schema: {
          tags,
          summary: 'Revoke an API key (admin), and delete the public keys it registered',
          params: KeyParams,
          querystring: RevokeKeyQuery,
          response: { 200: DataEnvelope(RevokedKey) },
        },
      },
      async (request, reply) => {
        requireAdmin(request.principal);
        const revoked = await service.revokeKey(request.params.key_id, request.principal.actor, request.query.reason);
        return ok(reply, { ...revoked, deleted: true as const, public_keys_deleted_count: revoked.public_keys_deleted.length });
      },
    );

    app.post(
      '/auth/agents/:agent_id/public-keys',
      {
        schema: {
          tags,
          summary: 'Register an Ed25519 public key for request signing',
          params: AgentParams,
          body: AddPublicKeyBody,
          response: { 201: DataEnvelope(PublicKey) },
        },
      },
      async (request, reply) => {
        assertActsAs(request.principal, request.params.agent_id);
        return created(reply, await service.addPublicKey(request.params.agent_id, request.body.public_key, request.principal.grantingKeyId));
      },
    );

    app.get(
      '/auth/agents/:agent_id/public-keys',
      {
        schema: {
          tags,
          summary: "List an agent's public keys",
          params: AgentParams,
          response: { 200: DataEnvelope(Type.Array(PublicKey)) },
        },
      },
      async (request, reply) => {
        assertActsAs(request.principal, request.params.agent_id);
        return ok(reply, await service.listPublicKeys(request.params.agent_id));
      },
    );

    app.delete(
      '/auth/agents/:agent_id/public-keys/:key_id',
      { schema: { tags, summary: 'Remove a public key', params: AgentKeyParams, response: { 200: Deleted } } },
      async (request, reply) => {
        assertActsAs(request.principal, request.params.agent_id);
        await service.deletePublicKey(request.params.agent_id, request.params.key_id);
        return deleted(reply, request.params.key_id);
      },
    );
  };
}
