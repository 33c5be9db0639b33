import { Type } from '@sinclair/typebox';
import { AgentId, NullableTimestamp, PageQuery, Reason, Timestamp } from '../http/schemas.js';

export const Role = Type.Union([Type.Literal('admin'), Type.Literal('agent')]);

export const CreateKeyBody = Type.Object(
  {
    agent_id: Type.Optional(AgentId),
    role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('agent')], { default: 'agent' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const ApiKey = Type.Object({
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
  agent_id: Type.Union([Type.String(), Type.Null()]),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it' }),
  created_at: Timestamp,
  revoked_at: NullableTimestamp,
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
  role: Role,
  agent_id: Type.Union([Type.String(), Type.Null()]),
  key_id: Type.Union([Type.String(), Type.Null()]),
  actor: Type.String(),
});
