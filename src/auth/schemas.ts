import { Type } from '@sinclair/typebox';
import { AgentId, NullableTimestamp, PageQuery, Reason, Timestamp } from '../http/schemas.js';
import { PERMISSION_NAMES, ROLE_NAMES } from './permissions.js';

/** Lower-case, so that `user:<username>` approvers match one way only; at most 64 characters. */
export const USERNAME_PATTERN = '^[a-z0-9][a-z0-9._@-]{0,63}$';
export const PASSWORD_MIN_LENGTH = 12;
/** scrypt hashes any length, but nobody needs more, and a bound keeps hostile bodies cheap. */
export const PASSWORD_MAX_LENGTH = 1024;

export const Role = Type.Union(
  ROLE_NAMES.map((name) => Type.Literal(name)),
  {
    description:
      'admin: every permission; operator: all but keys:admin and users:admin; approver: every :read and approvals:decide; viewer: every :read; agent: what an agent does, never deciding human steps',
  },
);
export const PermissionName = Type.Union(PERMISSION_NAMES.map((name) => Type.Literal(name)));

export const PermissionEntry = Type.Object(
  {
    name: PermissionName,
    description: Type.String(),
    roles: Type.Array(Role, { description: 'The roles that grant it' }),
  },
  { title: 'Permission' },
);

export const UserId = Type.String({ minLength: 1, maxLength: 100 });

export const CreateKeyBody = Type.Object(
  {
    agent_id: Type.Optional(AgentId),
    user_id: Type.Optional(
      Type.Intersect([UserId], {
        description:
          "A key that acts as this user (role at most the user's; default the user's). Without keys:admin, a user creates keys only for themselves",
      }),
    ),
    role: Type.Optional(
      Type.Union(
        ROLE_NAMES.map((name) => Type.Literal(name)),
        { description: "Default agent; for a key bound to a user, the user's role" },
      ),
    ),
    scopes: Type.Optional(
      Type.Array(PermissionName, {
        maxItems: PERMISSION_NAMES.length,
        description: 'Narrows the role to these permissions (an agent key may also be given approvals:decide); the creator must hold each',
      }),
    ),
    expires_at: Type.Optional(Type.String({ format: 'date-time', description: 'After this time the key is refused (401)' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const ApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
    role: Role,
    agent_id: Type.Union([Type.String(), Type.Null()]),
    user_id: Type.Union([Type.String(), Type.Null()], { description: 'The user the key acts as' }),
    scopes: Type.Union([Type.Array(PermissionName), Type.Null()], {
      description: 'The permissions the key is narrowed to; null: its whole role',
    }),
    prefix: Type.String({ description: 'The first characters of the key, to recognise it' }),
    created_at: Timestamp,
    revoked_at: NullableTimestamp,
    expires_at: NullableTimestamp,
    last_used_at: Type.Union([Timestamp, Type.Null()], { description: 'Updated at most once a minute' }),
  },
  { title: 'ApiKey' },
);

export const CreatedKey = Type.Intersect(
  [ApiKey, Type.Object({ key: Type.String({ description: 'The plain key; shown only in this response' }) })],
  { title: 'CreatedApiKey' },
);

export const ListKeysQuery = Type.Composite([
  PageQuery,
  Type.Object({
    include_revoked: Type.Optional(Type.Boolean({ default: false })),
    user_id: Type.Optional(
      Type.Intersect([UserId], { description: "Only this user's keys (without keys:admin: only one's own, the default)" }),
    ),
  }),
]);

export const KeyParams = Type.Object({ key_id: Type.String({ minLength: 1, maxLength: 100 }) });
export const RevokedKey = Type.Object(
  {
    id: Type.String(),
    deleted: Type.Literal(true),
    public_keys_deleted: Type.Array(Type.String(), {
      description: 'The public keys this API key had registered, deleted with it: signatures made with them no longer authenticate',
    }),
    public_keys_deleted_count: Type.Integer({ minimum: 0 }),
  },
  { title: 'RevokedApiKey' },
);
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

export const PublicKey = Type.Object(
  {
    id: Type.String(),
    agent_id: Type.String(),
    public_key: Type.String({ description: 'base64 of the raw 32 bytes' }),
    fingerprint: Type.String({ description: 'hex sha256 of the raw key' }),
    registered_by_key_id: Type.Union([Type.String(), Type.Null()], {
      description:
        'The agent API key that registered it; revoking that key deletes it. Null: registered by an admin key, or before this was recorded (both stay until deleted)',
    }),
    created_at: Timestamp,
  },
  { title: 'PublicKey' },
);

export const WhoAmI = Type.Object(
  {
    kind: Type.Union([Type.Literal('admin'), Type.Literal('agent'), Type.Literal('user'), Type.Literal('key')], {
      description:
        'agent: acts only as its agent_id and changes only what it created; user: a person (signed in, or a key bound to them); admin and key (operator, approver, viewer keys) act for the platform',
    }),
    id: Type.String({ description: 'The agent id, the user id (user), or the key id (admin, key)' }),
    role: Role,
    permissions: Type.Array(PermissionName),
    agent_id: Type.Union([Type.String(), Type.Null()]),
    username: Type.Union([Type.String(), Type.Null()], { description: "The user's (kind user)" }),
    key_id: Type.Union([Type.String(), Type.Null()]),
    session: Type.Union([Type.Object({ id: Type.String(), expires_at: Timestamp }), Type.Null()], {
      description: 'The console session the request came with (cookie); its expiry slides with use',
    }),
    actor: Type.String(),
  },
  { title: 'WhoAmI' },
);

const UserRole = Type.Union(
  ROLE_NAMES.filter((name) => name !== 'agent').map((name) => Type.Literal(name)),
  { description: "A person's role (any but agent): admin, operator, approver or viewer" },
);
const Username = Type.String({
  pattern: USERNAME_PATTERN,
  description: 'Lower-case letters, digits and . _ @ -, at most 64; what `user:<username>` approvers name',
});
const Password = Type.String({
  minLength: PASSWORD_MIN_LENGTH,
  maxLength: PASSWORD_MAX_LENGTH,
  description: `At least ${PASSWORD_MIN_LENGTH} characters; stored as a salted scrypt hash`,
});
const DisplayName = Type.String({ minLength: 1, maxLength: 200 });

export const CreateUserBody = Type.Object(
  {
    username: Username,
    role: UserRole,
    display_name: Type.Optional(DisplayName),
    password: Type.Optional(Type.Intersect([Password], { description: 'Without one the user signs in only with keys bound to them' })),
  },
  { additionalProperties: false },
);

export const UpdateUserBody = Type.Object(
  {
    role: Type.Optional(UserRole),
    display_name: Type.Optional(Type.Union([DisplayName, Type.Null()])),
    disabled: Type.Optional(
      Type.Boolean({ description: "true: the user's sessions end and its keys are refused, at once, until false again" }),
    ),
    password: Type.Optional(Type.Intersect([Password], { description: "A new password; the user's sessions end" })),
  },
  { additionalProperties: false },
);

export const User = Type.Object(
  {
    id: Type.String(),
    username: Type.String(),
    display_name: Type.Union([Type.String(), Type.Null()]),
    role: Role,
    disabled: Type.Boolean(),
    has_password: Type.Boolean({ description: 'Whether the user can sign in with a password' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'User' },
);

export const UserParams = Type.Object({ user_id: UserId });

export const SignInBody = Type.Object(
  {
    username: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    password: Type.Optional(Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH })),
    api_key: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'An API key exchanged for a session, instead of username and password' }),
    ),
  },
  { additionalProperties: false, description: 'username and password, or api_key' },
);

export const Session = Type.Object(
  {
    principal: WhoAmI,
    expires_at: Timestamp,
    csrf_token: Type.String({ description: 'Send it as X-CSRF-Token with every request that changes state (not GET, HEAD, OPTIONS)' }),
  },
  { title: 'ConsoleSession' },
);

export const OidcProvider = Type.Object(
  {
    configured: Type.Boolean(),
    name: Type.Union([Type.String(), Type.Null()], { description: 'What the sign-in page calls the provider' }),
    start_url: Type.Union([Type.String(), Type.Null()], {
      description: 'Where the browser goes to sign in (with `return_to`, a console path to come back to)',
    }),
  },
  { title: 'OidcProvider' },
);
export const OidcStartQuery = Type.Object({
  return_to: Type.Optional(Type.String({ maxLength: 2000, description: 'A console path to come back to after signing in' })),
});
/** What the provider sends back (code and state, or error): read by openid-client, only bounded here. */
export const OidcCallbackQuery = Type.Object({}, { additionalProperties: Type.String({ maxLength: 4000 }) });
