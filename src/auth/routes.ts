import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page } from '../http/schemas.js';
import { PERMISSION_NAMES, PERMISSIONS, ROLE_NAMES, ROLES } from './permissions.js';
import { assertActsAs, type Principal } from './principal.js';
import {
  AddPublicKeyBody,
  AgentKeyParams,
  AgentParams,
  ApiKey,
  CreatedKey,
  CreateKeyBody,
  KeyParams,
  PermissionEntry,
  RevokeKeyQuery,
  RevokedKey,
  ListKeysQuery,
  PublicKey,
  WhoAmI,
} from './schemas.js';
import type { AuthService } from './service.js';

const tags = ['auth'];

/** GET /auth/whoami's answer (and a session's principal). */
export function whoAmI(p: Principal) {
  const id = p.kind === 'agent' ? p.agentId! : (p.user?.id ?? p.keyId ?? p.actor);
  const session = p.session === null ? null : { id: p.session.id, expires_at: new Date(p.session.expiresAt).toISOString() };
  return {
    kind: p.kind,
    id,
    role: p.role,
    permissions: [...p.permissions],
    agent_id: p.agentId,
    username: p.user?.username ?? null,
    key_id: p.keyId,
    session,
    actor: p.actor,
  };
}

/** The catalogue as served: each permission with the roles that grant it. */
const CATALOGUE = PERMISSION_NAMES.map((name) => ({
  name,
  description: PERMISSIONS[name],
  roles: ROLE_NAMES.filter((role) => ROLES[role].includes(name)),
}));

export function authRoutes(service: AuthService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/auth/whoami',
      {
        config: { permission: 'authenticated' },
        schema: { tags, summary: 'The principal behind the credentials', response: { 200: DataEnvelope(WhoAmI) } },
      },
      async (request, reply) => ok(reply, whoAmI(request.principal)),
    );

    app.get(
      '/auth/permissions',
      {
        config: { permission: 'authenticated' },
        schema: {
          tags,
          summary: 'The permissions catalogue, with the roles that grant each',
          response: { 200: DataEnvelope(Type.Array(PermissionEntry)) },
        },
      },
      async (_request, reply) => ok(reply, CATALOGUE),
    );

    app.post(
      '/auth/keys',
      {
        config: { permission: 'keys:admin', orOwnUser: true, conflict: 'The user the key would act as is disabled' },
        schema: {
          tags,
          summary: 'Create an API key (a user without keys:admin: a key bound to themselves)',
          body: CreateKeyBody,
          response: { 201: DataEnvelope(CreatedKey) },
        },
      },
      async (request, reply) => {
        return created(reply, await service.createKey(request.body, request.principal));
      },
    );

    app.get(
      '/auth/keys',
      {
        config: { permission: 'keys:admin', orOwnUser: true },
        schema: {
          tags,
          summary: 'List API keys (a user without keys:admin: their own)',
          querystring: ListKeysQuery,
          response: { 200: ListEnvelope(ApiKey) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        const { include_revoked: includeRevoked, user_id: userId } = request.query;
        return list(
          reply,
          await service.listKeys(window, { includeRevoked, ...(userId === undefined ? {} : { userId }) }, request.principal),
          window,
        );
      },
    );

    app.delete(
      '/auth/keys/:key_id',
      {
        config: { permission: 'keys:admin', orOwnUser: true, conflict: 'The key is revoked already' },
        schema: {
          tags,
          summary: 'Revoke an API key, and delete the public keys it registered (a user without keys:admin: one of their own)',
          params: KeyParams,
          querystring: RevokeKeyQuery,
          response: { 200: DataEnvelope(RevokedKey) },
        },
      },
      async (request, reply) => {
        const revoked = await service.revokeKey(request.params.key_id, request.principal.actor, request.query.reason, request.principal);
        return ok(reply, { ...revoked, deleted: true as const, public_keys_deleted_count: revoked.public_keys_deleted.length });
      },
    );

    app.post(
      '/auth/agents/:agent_id/public-keys',
      {
        config: { permission: 'keys:admin', orSelf: 'agent_id', conflict: 'The public key is registered for the agent already' },
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
        return created(
          reply,
          await service.addPublicKey(request.params.agent_id, request.body.public_key, request.principal.grantingKeyId),
        );
      },
    );

    app.get(
      '/auth/agents/:agent_id/public-keys',
      {
        config: { permission: 'keys:admin', orSelf: 'agent_id' },
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
      {
        config: { permission: 'keys:admin', orSelf: 'agent_id' },
        schema: { tags, summary: 'Remove a public key', params: AgentKeyParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        assertActsAs(request.principal, request.params.agent_id);
        await service.deletePublicKey(request.params.agent_id, request.params.key_id);
        return deleted(reply, request.params.key_id);
      },
    );
  };
}
