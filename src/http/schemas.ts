import type { Static, TSchema } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import { AGENT_ID_PATTERN } from '../kernel/agent-ids.js';
import { ERROR_STATUS, type ErrorCode } from '../kernel/errors.js';
import { EXACT_TOTAL_BOUND, type Page } from '../kernel/pagination.js';

/** Shared TypeBox pieces: the response envelope and common parameters. */

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
export const JsonObject = Type.Record(Type.String(), Type.Unknown(), { description: 'Free-form JSON object' });

export const Meta = Type.Object({ request_id: Type.String() });
export const ListMeta = Type.Object({
  request_id: Type.String(),
  total: Type.Integer({
    description: `How many items the list holds: exact up to ${EXACT_TOTAL_BOUND.toLocaleString('en-US')}, past that an estimate (see total_estimated)`,
  }),
  limit: Type.Integer(),
  offset: Type.Integer(),
  total_estimated: Type.Optional(
    Type.Literal(true, {
      description:
        "Present when total is an estimate: PostgreSQL's planner's, or on SQLite a lower bound (the list holds at least that many)",
    }),
  ),
  next_cursor: Type.Optional(
    Type.String({ description: 'Lists that page by cursor: pass it as `cursor` for the page after this one; absent on the last page' }),
  ),
});

export const DataEnvelope = <T extends TSchema>(data: T) => Type.Object({ data, meta: Meta });
export const ListEnvelope = <T extends TSchema>(item: T) => Type.Object({ data: Type.Array(item), meta: ListMeta });

export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: Object.keys(ERROR_STATUS) }),
    message: Type.String({ description: 'What went wrong and how to fix the request' }),
    details: Type.Optional(
      Type.Unknown({ description: 'More about the error; for invalid_request, each bad field as {field, message, in?}' }),
    ),
  }),
  meta: Meta,
});

/** A budget's pause of a scope (plan, capability…), shown to whoever reads that scope; null when none pauses it. */
export const BudgetPause = Type.Object(
  {
    budget_id: Type.String({ description: 'The budget that paused it (its details are for budgets:admin)' }),
    until: Type.Union([Timestamp, Type.Null()], { description: "When its period ends; null for a total budget's (until a resume)" }),
  },
  { title: 'BudgetPause', description: 'A budget paused it until `until`, a resume, or a limit raised above what it spent' },
);
export const NullableBudgetPause = (description: string) => Type.Union([BudgetPause, Type.Null()], { description });

/** What deleting a resource answers: its id. */
export const DeletedResource = Type.Object({ id: Type.String(), deleted: Type.Literal(true) }, { title: 'Deleted' });
export const Deleted = DataEnvelope(DeletedResource);

/** A payload (or output, or input) over SWITCHBOARD_INLINE_PAYLOAD_BYTES, stored as an artifact. */
export const PayloadRefSchema = (what: string) =>
  Type.Object(
    {
      artifact_id: Type.String({ description: 'The artifact holding the JSON text' }),
      url: Type.String({ description: `Signed, time-limited GET URL of the ${what}'s JSON text (application/json); needs no API key` }),
      size_bytes: Type.Integer({ description: 'Bytes of the JSON text' }),
      sha256: Type.String({ description: 'sha256 of the JSON text, hex' }),
    },
    {
      description: `The ${what} travels by reference: its JSON text is an artifact owned by the sender and readable by the receiver; the ${what} field itself is null`,
    },
  );

/** What a sender gives to send an artifact it may read as the payload (instead of `payload`). */
export const PayloadRefInput = Type.Object(
  {
    artifact_id: Type.String({ minLength: 1, maxLength: 200 }),
    url: Type.Optional(Type.String({ description: 'Ignored: the server signs its own' })),
    size_bytes: Type.Optional(Type.Integer({ minimum: 0, description: 'Ignored: the server reads the artifact' })),
    sha256: Type.Optional(Type.String({ description: 'Ignored: the server reads the artifact' })),
  },
  {
    additionalProperties: false,
    description:
      'Send an artifact you own or may read as the payload (its content: the JSON text of the payload, application/json); the receiver may read it. Exclusive with payload',
  },
);

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
});
export type PageQuery = Static<typeof PageQuery>;

/** PageQuery for lists that page by keyset cursor as well as by offset. */
export const CursorPageQuery = Type.Composite([
  PageQuery,
  Type.Object({
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        pattern: '^[A-Za-z0-9_-]+$',
        description:
          'The page after the one whose meta.next_cursor this is (instead of offset): as fast at the millionth row as at the first',
      }),
    ),
  }),
]);

export function page(query: { limit?: number; offset?: number; cursor?: string }): Page {
  const window: Page = { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 };
  if (query.cursor !== undefined) window.cursor = query.cursor;
  return window;
}

/** Why an operator acted (approve, input, cancel, key revoke, routine pause/trigger): stored on the event it causes. */
export const Reason = Type.String({
  minLength: 1,
  maxLength: 1000,
  description: 'Why, for the audit log: stored as the `reason` of the event this request causes',
});
/** The body of an operator action whose only field is its reason: optional, and may be empty. */
export const ReasonBody = Type.Union([Type.Object({ reason: Type.Optional(Reason) }, { additionalProperties: false }), Type.Null()]);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export { AGENT_ID_PATTERN };
/** Agent ids: see kernel/agent-ids.ts (the principal names and prefixes no agent may take). */
export const AgentId = Type.String({ pattern: AGENT_ID_PATTERN, description: 'Agent id' });

/**
 * The largest integer a request may carry where its schema sets no maximum: PostgreSQL's
 * `integer`, the narrowest integer column. Unbounded, `offset=1e20` or a version of 1e10 got
 * as far as the database and failed there (a 500 on 22 list routes). A field stored wider,
 * or never stored, states its own maximum.
 */
export const MAX_INTEGER = 2_147_483_647;

/** Keywords whose values are subschemas (not data such as `default` or `enum`). */
const SUBSCHEMA_KEYWORDS = [
  'items',
  'additionalItems',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'anyOf',
  'oneOf',
  'allOf',
  'prefixItems',
];
const SUBSCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions'];

const isSchemaObject = (schema: unknown): schema is Record<string, unknown> =>
  typeof schema === 'object' && schema !== null && !Array.isArray(schema);

/** A shallow copy of a JSON schema with `map` applied to each of its direct subschemas; anything else as it is. */
export function mapSubschemas<T>(schema: T, map: (subschema: unknown) => unknown): T {
  if (!isSchemaObject(schema)) return schema;
  const copy: Record<string, unknown> = { ...schema };
  for (const keyword of SUBSCHEMA_KEYWORDS) {
    const sub = copy[keyword];
    if (sub !== undefined) copy[keyword] = Array.isArray(sub) ? sub.map(map) : map(sub);
  }
  for (const keyword of SUBSCHEMA_MAP_KEYWORDS) {
    const subs = copy[keyword];
    if (isSchemaObject(subs)) copy[keyword] = Object.fromEntries(Object.entries(subs).map(([name, sub]) => [name, map(sub)]));
  }
  return copy as T;
}

/**
 * The copies by schema: the same copy for the same schema, so that the validators compiled from
 * it (which Ajv keeps by schema object, http/server.ts) serve every app of the process.
 */
const bounded = new WeakMap<object, object>();

/** A copy of a JSON schema in which every integer without an upper bound gets MAX_INTEGER. */
export function withIntegerMaximum<T>(schema: T): T {
  if (!isSchemaObject(schema)) return schema;
  const known = bounded.get(schema);
  if (known) return known as T;
  const copy: Record<string, unknown> = mapSubschemas(schema, withIntegerMaximum);
  const type = copy.type;
  const integer = type === 'integer' || (Array.isArray(type) && type.includes('integer'));
  if (integer && copy.maximum === undefined && copy.exclusiveMaximum === undefined) copy.maximum = MAX_INTEGER;
  bounded.set(schema, copy);
  return copy as T;
}

/** The route schema with every integer of the request (body, query, params, headers) bounded. */
export function withBoundedRequestIntegers<T extends object>(routeSchema: T): T {
  const copy = { ...routeSchema } as Record<string, unknown>;
  for (const part of ['body', 'querystring', 'params', 'headers']) if (part in copy) copy[part] = withIntegerMaximum(copy[part]);
  return copy as T;
}
