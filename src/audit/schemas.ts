import { Type, type Static } from '@sinclair/typebox';
import { CursorPageQuery, Timestamp } from '../http/schemas.js';

/**
 * The audit domain's schemas, written once: they validate
 * requests, type the service and the SDK, and document the OpenAPI.
 */

const NullableText = (description: string) => Type.Unsafe<string | null>({ type: ['string', 'null'], description });

export const AUDIT_OUTCOMES = ['allowed', 'denied', 'failed'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];
const Outcome = Type.Unsafe<AuditOutcome>({
  type: 'string',
  enum: [...AUDIT_OUTCOMES],
  description: 'allowed: the change was made; denied: a 401 or 403; failed: the change was tried and rolled back',
});

export const AuditEntry = Type.Object(
  {
    id: Type.String({ description: 'Entry id (aud_…)' }),
    at: Timestamp,
    actor: Type.Object({
      kind: Type.String({
        description:
          'admin, agent, key (an operator, approver or viewer key), user; anonymous (no valid credentials); system (workers, the CLI)',
      }),
      id: NullableText('The agent id, user, or the key’s actor; null when anonymous'),
      key_id: NullableText('The API key used, if any'),
    }),
    action: Type.String({
      description:
        "What was done, e.g. 'plan.delete'; for a denial, the operation asked for as the SDK names it (e.g. 'coordination.deletePlan')",
    }),
    resource: Type.Object({
      type: Type.String({ description: "The kind of thing changed (plan, run, key …); 'path' for a denial" }),
      id: Type.String({ description: 'Its id; for a denial, the request path' }),
    }),
    outcome: Outcome,
    status: Type.Unsafe<number | null>({
      type: ['integer', 'null'],
      description: 'The HTTP status of a denied or failed request; null for a change that was made',
    }),
    request_id: NullableText('The request that caused it (X-Request-ID)'),
    ip: NullableText('The client address'),
    user_agent: NullableText('The client’s User-Agent'),
    count: Type.Integer({
      minimum: 1,
      description: 'Denials this entry stands for: repeated ones of one actor and operation within the window are one entry',
    }),
    prev_hash: Type.String({ description: 'The hash of the entry before it (64 zeros for the first)' }),
    hash: Type.String({ description: 'hex sha256(prev_hash + canonical JSON of every other field, keys sorted, no whitespace)' }),
  },
  { title: 'AuditEntry' },
);
export type AuditEntry = Static<typeof AuditEntry>;

export const ListAuditQuery = Type.Composite([
  Type.Object({
    actor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'Only entries of this actor id (agent id, user, key actor)' }),
    ),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Only this action, e.g. 'plan.delete'" })),
    resource_id: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'Only entries about this resource' })),
    outcome: Type.Optional(Outcome),
    after: Type.Optional(Type.Intersect([Timestamp], { description: 'Only entries at or after this time' })),
    before: Type.Optional(Type.Intersect([Timestamp], { description: 'Only entries before this time' })),
  }),
  CursorPageQuery,
]);
export type ListAuditQuery = Static<typeof ListAuditQuery>;

export const AuditVerification = Type.Object(
  {
    ok: Type.Boolean({ description: 'Every entry checked holds its hash and follows the one before' }),
    checked: Type.Integer({ description: 'Entries checked (up to the first broken one)' }),
    first_broken: Type.Optional(Type.String({ description: 'The id of the first entry whose hash or link does not hold' })),
    anchor: Type.Union(
      [
        Type.Object({
          seq: Type.Integer({ description: 'The last trimmed entry’s position' }),
          hash: Type.String({ description: 'Its hash: the prev_hash of the first entry kept' }),
          trimmed_at: Timestamp,
        }),
        Type.Null(),
      ],
      { description: 'Where retention last trimmed the log; null when it never did' },
    ),
  },
  { title: 'AuditVerification' },
);
export type AuditVerification = Static<typeof AuditVerification>;
