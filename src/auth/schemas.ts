import { Type } from '@sinclair/typebox';
import { AgentId, NullableTimestamp, PageQuery, Reason, Timestamp } from '../http/schemas.js';
import { PERMISSION_NAMES, ROLE_NAMES } from './permissions.js';

export const Role = Type.Union(ROLE_NAMES.map((name) => Type.Literal(name)), {
  description: 'admin: every permission; operator: all but keys:admin and users:admin; approver: every :read and approvals:decide; viewer: every :read; agent: what an agent does, never deciding human steps',
});
export const PermissionName = Type.Union(PERMISSION_NAMES.map((name) => Type.Literal(name)));

export const PermissionEntry = Type.Object({
  name: PermissionName,
  description: Type.String(),
  roles: Type.Array(Role, { description: 'The roles that grant it' }),
});

export const CreateKeyBody = Type.Object(
  {
    agent_id: Type.Optional(AgentId),
    role: Type.Optional(Type.Union(ROLE_NAMES.map((name) => Type.Literal(name)), { default: 'agent' })),
    scopes: Type.Optional(
      Type.Array(PermissionName, {
        maxItems: PERMISSION_NAMES.length,
        description: "Narrows the role to these permissions (an agent key may also be given approvals:decide); the creator must hold each",
      }),
    ),
    expires_at: Type.Optional(Type.String({ format: 'date-time', description: 'After this time the key is refused (401)' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const ApiKey = Type.Object({
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
  agent_id: Type.Union([Type.String(), Type.Null()]),
  scopes: Type.Union([Type.Array(PermissionName), Type.Null()], { description: 'The permissions the key is narrowed to; null: its whole role' }),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it' }),
  created_at: Timestamp,
  revoked_at: NullableTimestamp,
  expires_at: NullableTimestamp,
  last_used_at: Type.Union([Timestamp, Type.Null()], { description: 'Updated at most once a minute' }),
});

export const CreatedKey = Type.Intersect([
  ApiKey,
  Type.Object({ key: Type.String({ description: 'The plain key; shown only in this response' }) }),
]);

export const ListKeysQuery = Type.Composite([
  PageQuery,
  Type.Object({ include_revoked: Type.Optional(Type.Boolean({ default: false })) }),
]);

export const KeyParams = Type.Object({ key_id: Type.String({ minLength: 1, maxLength: 100 }) });
export const RevokedKey = Type.Object({
  id: Type.String(),
  deleted: Type.Literal(true),
  public_keys_deleted: Type.Array(Type.String(), { description: 'The public keys this API key had registered, deleted with it: signatures made with them no longer authenticate' }),
  public_keys_deleted_count: Type.Integer({ minimum: 0 }),
});
export const RevokeKeyQuery = Type.Object({ reason: Type.Optional(Reason) });
export const AgentParams = Type.Object({ agent_id: AgentId });
export const AgentKeyParams = Type.Object({ agent_id: AgentId, key_id: Type.String({ minLength: 1, maxLength: 100 }) });

export const AddPublicKeyBody = Type.Object(
  {
    public_key: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'Ed25519 public key: base64 of the raw 32 bytes, or PEM (SPKI)',
    }),
  },
  { additionalProperties: false },
);

export const PublicKey = Type.Object({
  id: Type.String(),
  agent_id: Type.String(),
  public_key: Type.String({ description: 'base64 of the raw 32 bytes' }),
  fingerprint: Type.String({ description: 'hex sha256 of the raw key' }),
  registered_by_key_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The agent API key that registered it; revoking that key deletes it. Null: registered by an admin key, or before this was recorded (both stay until deleted)',
  }),
  created_at: Timestamp,
});

export const WhoAmI = Type.Object({
  kind: Type.Union([Type.Literal('admin'), Type.Literal('agent'), Type.Literal('key')], {
    description: 'agent: acts only as its agent_id and changes only what it created; admin and key (operator, approver, viewer keys) act for the platform',
  }),
  id: Type.String({ description: 'The agent id, or the key id (admin, key)' }),
  role: Role,
  permissions: Type.Array(PermissionName),
  agent_id: Type.Union([Type.String(), Type.Null()]),
  key_id: Type.Union([Type.String(), Type.Null()]),
  actor: Type.String(),
});
