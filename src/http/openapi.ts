import type { Requirement } from '../auth/index.js';
import { OPERATIONS } from '../kernel/operations.js';
import { ERROR_STATUS, type ErrorCode } from '../kernel/errors.js';
import { ErrorEnvelope } from './schemas.js';

/*
 * What the served OpenAPI document says beyond the route schemas, added to the document
 * @fastify/swagger builds (its `transformObject`): each operation's id, the SDK's method name,
 * and the errors it can answer, derived from what the operation takes.
 */

interface Parameter {
  in: string;
  name: string;
}
interface Operation {
  operationId?: string;
  /** The permission the caller needs (`authenticated`: any credentials); absent on public operations. */
  'x-permission'?: Requirement;
  parameters?: Parameter[];
  requestBody?: unknown;
  security?: unknown[];
  responses?: Record<string, unknown>;
}
interface Document {
  paths?: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, unknown>; responses?: Record<string, unknown> };
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);
const BODY_METHODS = new Set(['put', 'post', 'patch']);

/** `METHOD /path` → the SDK's `domain.name`. */
const OPERATION_NAMES = new Map(
  Object.entries(OPERATIONS).flatMap(([domain, operations]) =>
    Object.entries(operations).map(([name, [method, path]]) => [`${method} ${path}`, `${domain}.${name}`] as const),
  ),
);

/** The operation a route serves, as the SDK names it (`coordination.deletePlan`), from its method and URL. */
export function operationName(method: string, url: string): string | undefined {
  return OPERATION_NAMES.get(`${method} ${documentedPath(url)}`);
}

/**
 * Fastify's trailing wildcard (`/coordination/hooks/*`, the rest of the URL) comes out of
 * @fastify/swagger as `{*}`, which is no parameter name OpenAPI allows: it is documented as
 * `{path}`. The route still serves every path below its prefix.
 */
const WILDCARD = '*';
const WILDCARD_NAME = 'path';

/** The error responses, by status: the envelope of design §2 with the code it carries. */
const ERRORS: Record<number, { name: string; description: string; headers?: Record<string, unknown> }> = {
  400: { name: 'InvalidRequest', description: 'A parameter or the body is invalid; `error.details` lists each bad field' },
  401: {
    name: 'Unauthorized',
    description: 'Credentials are missing or invalid: an unknown, revoked or malformed API key, or a stale, replayed or wrong signature',
  },
  403: {
    name: 'Forbidden',
    description:
      "The caller may not do this: it lacks the operation's permission (`x-permission`, named in the message), acts as another agent, touches an object it may not read or change, or an invalid or expired URL signature",
  },
  404: { name: 'NotFound', description: 'Nothing is known by an id, token or path in the URL' },
  413: { name: 'PayloadTooLarge', description: 'The body is larger than the server accepts' },
  429: {
    name: 'RateLimited',
    description: "The caller's request budget is spent (per key or agent; per client address without credentials)",
    headers: { 'Retry-After': { description: 'Seconds until the budget refills', schema: { type: 'integer' } } },
  },
  500: { name: 'InternalError', description: 'An unexpected failure; the body says nothing more, the server log has it under the request id' },
};

function codeOf(status: number): ErrorCode {
  return (Object.keys(ERROR_STATUS) as ErrorCode[]).find((code) => ERROR_STATUS[code] === status)!;
}

/** The statuses an operation can answer with an error, from what it takes and who may call it. */
function errorStatuses(method: string, operation: Operation): number[] {
  const parameters = operation.parameters ?? [];
  // A body is read (and may be malformed or too large) on these methods even where the route
  // takes any body and documents none (hooks, routine webhooks).
  const body = operation.requestBody !== undefined || BODY_METHODS.has(method);
  // Public routes (webhooks, upload URLs, signed downloads) document `security: []`.
  const authenticated = operation.security?.length !== 0;
  const statuses: number[] = [];
  if (parameters.length > 0 || body) statuses.push(400);
  if (authenticated) statuses.push(401);
  // Any credentials may be refused (the operation's permission, acting as oneself, owners);
  // without them, only a URL signature can be.
  if (authenticated || parameters.some((p) => p.in === 'query' && p.name === 'signature')) statuses.push(403);
  if (parameters.some((p) => p.in === 'path')) statuses.push(404);
  if (body) statuses.push(413);
  // Every documented route is rate limited (only the hidden health probes are not).
  statuses.push(429, 500);
  return statuses;
}

/** `/runs/:run_id/x/*` (a route's URL) → `/runs/{run_id}/x/{path}` (the document's). */
function documentedPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, `{${WILDCARD_NAME}}`);
}

function describeOperation(method: string, path: string, documented: Operation, permission: Requirement | null | undefined): Operation {
  // @fastify/swagger shares one object between the methods of a route (the hooks take five).
  const operation: Operation = { ...documented };
  // Written `domain_name`: no dot, which code generators mangle.
  const operationId = OPERATION_NAMES.get(`${method.toUpperCase()} ${path}`)?.replace('.', '_');
  if (operationId) operation.operationId = operationId;
  if (permission) operation['x-permission'] = permission;
  if (documented.parameters) operation.parameters = documented.parameters.map((p) => (p.in === 'path' && p.name === WILDCARD ? { ...p, name: WILDCARD_NAME } : p));
  // A route's own response for a status wins over the shared one.
  const responses: Record<string, unknown> = { ...documented.responses };
  for (const status of errorStatuses(method, operation)) responses[status] ??= { $ref: `#/components/responses/${ERRORS[status]!.name}` };
  operation.responses = responses;
  return operation;
}

/**
 * Adds operation ids, permissions (from the route table) and error responses to the document
 * @fastify/swagger built, and names its wildcard.
 */
export function describeOperations<D extends object>(built: D, routes: readonly { method: string; url: string; permission: Requirement | null }[]): D {
  const document = built as Document;
  const permissions = new Map(routes.map((route) => [`${route.method.toLowerCase()} ${documentedPath(route.url)}`, route.permission]));
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [builtPath, item] of Object.entries(document.paths ?? {})) {
    const path = builtPath.replace(`{${WILDCARD}}`, `{${WILDCARD_NAME}}`);
    paths[path] = Object.fromEntries(
      Object.entries(item).map(([method, value]) => [
        method,
        METHODS.has(method) ? describeOperation(method, path, value as Operation, permissions.get(`${method} ${path}`)) : value,
      ]),
    );
  }
  const responses = Object.fromEntries(
    Object.entries(ERRORS).map(([status, { name, description, headers }]) => [
      name,
      {
        description: `\`${codeOf(Number(status))}\`: ${description}`,
        ...(headers ? { headers } : {}),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );
  const described: Document = {
    ...document,
    paths,
    components: {
      ...document.components,
      schemas: { ...document.components?.schemas, Error: JSON.parse(JSON.stringify(ErrorEnvelope)) },
      responses: { ...document.components?.responses, ...responses },
    },
  };
  return described as D;
}
