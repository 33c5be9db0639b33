import { isDeepStrictEqual } from 'node:util';
import { OPERATIONS } from '#client/operations.js';
import { ERROR_STATUS, type ErrorCode } from '../kernel/errors.js';
import { ErrorEnvelope, mapSubschemas } from './schemas.js';

/*
 * What the served OpenAPI document says beyond the route schemas, added to the document
 * @fastify/swagger builds (its `transformObject`): each operation's id, the SDK's method name,
 * the errors it can answer, derived from what the operation takes and its route declares, and
 * the resources as named schemas (components) that code generators turn into one type each.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * When the operation answers 409 `conflict` (the state of what it acts on refuses it), in a
     * few words for the document; absent on routes whose services never throw Conflict.
     */
    conflict?: string;
    /**
     * A public route whose URL carries a credential other than a signature (an approval link's
     * token): when it answers 403, for the document. Authenticated routes' 403 comes from their
     * permission, a signed URL's from its signature.
     */
    forbidden?: string;
  }
}

/** What the document shows of a route beyond its schema: who may call it, and when it conflicts or refuses. */
export interface DocumentedRoute {
  method: string;
  url: string;
  permission: string | null;
  conflict: string | null;
  forbidden: string | null;
}

interface Parameter {
  in: string;
  name: string;
  schema?: unknown;
}
type Content = Record<string, { schema?: unknown }>;
/** A response object, or a `$ref` to a shared one. */
type ResponseObject = { content?: Content } & Record<string, unknown>;
interface Operation {
  operationId?: string;
  /** The permission the caller needs (`authenticated`: any credentials); absent on public operations. */
  'x-permission'?: string;
  parameters?: Parameter[];
  requestBody?: { content?: Content };
  security?: unknown[];
  responses?: Record<string, ResponseObject>;
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

/** The error responses every operation answering them shares, by status: the error envelope with the code it carries. */
const SHARED_ERRORS: Record<number, { name: string; description: string; headers?: Record<string, unknown> }> = {
  400: { name: 'InvalidRequest', description: 'A parameter or the body is invalid; `error.details` lists each bad field' },
  401: {
    name: 'Unauthorized',
    description: 'Credentials are missing or invalid: an unknown, revoked or malformed API key, or a stale, replayed or wrong signature',
  },
  404: { name: 'NotFound', description: 'Nothing is known by an id, token or path in the URL' },
  413: { name: 'PayloadTooLarge', description: 'The body is larger than the server accepts' },
  429: {
    name: 'RateLimited',
    description: "The caller's request budget is spent (per key or agent; per client address without credentials)",
    headers: { 'Retry-After': { description: 'Seconds until the budget refills', schema: { type: 'integer' } } },
  },
  500: {
    name: 'InternalError',
    description: 'An unexpected failure; the body says nothing more, the server log has it under the request id',
  },
};

function codeOf(status: number): ErrorCode {
  return (Object.keys(ERROR_STATUS) as ErrorCode[]).find((code) => ERROR_STATUS[code] === status)!;
}

/** An error response: the envelope, with the code it carries leading its description. */
function errorResponse(status: number, description: string, headers?: Record<string, unknown>): ResponseObject {
  return {
    description: `\`${codeOf(status)}\`: ${description}`,
    ...(headers ? { headers } : {}),
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
}

/** Why an operation answers 403: the permission its route declares, or on a public one what its URL carries. */
function forbiddenBecause(permission: string | null, declared: string | null): string {
  const elsewhere = 'acts as another agent, or touches an object it may not read or change';
  if (declared !== null) return declared;
  if (permission === null) return 'The URL signature is invalid or has expired';
  if (permission === 'authenticated') return `Any credentials may call this operation, but the caller ${elsewhere}`;
  return `The caller lacks the permission \`${permission}\` (\`x-permission\`; the message names it), ${elsewhere}`;
}

/** The errors an operation can answer, by status: derived from what it takes and what its route declares. */
function errorResponses(method: string, operation: Operation, route: DocumentedRoute | undefined): Record<number, ResponseObject> {
  const parameters = operation.parameters ?? [];
  const shared = (status: number): ResponseObject => ({ $ref: `#/components/responses/${SHARED_ERRORS[status]!.name}` });
  // A body is read (and may be malformed or too large) on these methods even where the route
  // takes any body and documents none (hooks, routine webhooks).
  const body = operation.requestBody !== undefined || BODY_METHODS.has(method);
  // Public routes (webhooks, upload URLs, signed downloads) document `security: []`.
  const authenticated = operation.security?.length !== 0;
  const permission = route?.permission ?? null;
  const forbidden = route?.forbidden ?? null;
  const errors: Record<number, ResponseObject> = {};
  if (parameters.length > 0 || body) errors[400] = shared(400);
  if (authenticated) errors[401] = shared(401);
  // Any credentials may be refused (the operation's permission, acting as oneself, owners);
  // without them, only what the URL carries: a signature, or what the route declares.
  if (authenticated || forbidden !== null || parameters.some((p) => p.in === 'query' && p.name === 'signature')) {
    errors[403] = errorResponse(403, forbiddenBecause(permission, forbidden));
  }
  if (parameters.some((p) => p.in === 'path')) errors[404] = shared(404);
  if (route?.conflict) errors[409] = errorResponse(409, route.conflict);
  if (body) errors[413] = shared(413);
  // Every documented route is rate limited (only the hidden health probes are not).
  errors[429] = shared(429);
  errors[500] = shared(500);
  return errors;
}

/** `/runs/:run_id/x/*` (a route's URL) → `/runs/{run_id}/x/{path}` (the document's). */
function documentedPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, `{${WILDCARD_NAME}}`);
}

/** What OpenAPI allows as a component's name. */
const COMPONENT_NAME = /^[A-Za-z0-9._-]+$/;

/**
 * The named schemas of the document. A schema with a `title` (each domain's schemas.ts titles
 * its resources: `Run`, `Plan`, `Task` …) becomes the component of that name, and every place
 * it occurs a `$ref` to it, so that a generated client has one `Run` type rather than a copy
 * per operation. The route schemas themselves stay whole: validation, serialization and the MCP
 * tools never see a `$ref`.
 */
class NamedSchemas {
  readonly components: Record<string, unknown> = {};

  /** `schema` with each titled schema in it (itself included) replaced by a `$ref` to its component. */
  readonly name = (schema: unknown): unknown => {
    const named = mapSubschemas(schema, this.name);
    const title = (named as { title?: unknown } | null)?.title;
    if (typeof title !== 'string' || Array.isArray(named)) return named;
    if (!COMPONENT_NAME.test(title)) throw new Error(`The schema title '${title}' is no component name (letters, digits, . _ -)`);
    const known = this.components[title];
    // One name for two shapes would give generated code one wrong type: a second title is needed.
    if (known !== undefined && !isDeepStrictEqual(known, named))
      throw new Error(`Two different schemas are titled '${title}': give one of them another title`);
    this.components[title] = named;
    return { $ref: `#/components/schemas/${title}` };
  };

  /** The operation with the titled schemas of its parameters, body and responses named. */
  operation(operation: Operation): Operation {
    const content = (media: Content) =>
      Object.fromEntries(
        Object.entries(media).map(([type, entry]) => [
          type,
          entry.schema === undefined ? entry : { ...entry, schema: this.name(entry.schema) },
        ]),
      );
    const named: Operation = { ...operation };
    if (operation.parameters)
      named.parameters = operation.parameters.map((p) => (p.schema === undefined ? p : { ...p, schema: this.name(p.schema) }));
    if (operation.requestBody?.content) named.requestBody = { ...operation.requestBody, content: content(operation.requestBody.content) };
    if (operation.responses) {
      named.responses = Object.fromEntries(
        Object.entries(operation.responses).map(([status, response]) => [
          status,
          response.content ? { ...response, content: content(response.content) } : response,
        ]),
      );
    }
    return named;
  }
}

function describeOperation(
  method: string,
  path: string,
  documented: Operation,
  route: DocumentedRoute | undefined,
  names: NamedSchemas,
): Operation {
  // @fastify/swagger shares one object between the methods of a route (the hooks take five).
  const operation: Operation = names.operation(documented);
  // Written `domain_name`: no dot, which code generators mangle.
  const operationId = OPERATION_NAMES.get(`${method.toUpperCase()} ${path}`)?.replace('.', '_');
  if (operationId) operation.operationId = operationId;
  if (route?.permission) operation['x-permission'] = route.permission;
  if (operation.parameters)
    operation.parameters = operation.parameters.map((p) => (p.in === 'path' && p.name === WILDCARD ? { ...p, name: WILDCARD_NAME } : p));
  // A route's own response for a status wins over the derived one.
  const responses: Record<string, ResponseObject> = { ...operation.responses };
  for (const [status, response] of Object.entries(errorResponses(method, operation, route))) responses[status] ??= response;
  operation.responses = responses;
  return operation;
}

/**
 * Adds operation ids, permissions and error responses (from the route table) to the document
 * @fastify/swagger built, names its resource schemas and its wildcard.
 */
export function describeOperations<D extends object>(built: D, routes: readonly DocumentedRoute[]): D {
  const document = built as Document;
  const byOperation = new Map(routes.map((route) => [`${route.method.toLowerCase()} ${documentedPath(route.url)}`, route]));
  const names = new NamedSchemas();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [builtPath, item] of Object.entries(document.paths ?? {})) {
    const path = builtPath.replace(`{${WILDCARD}}`, `{${WILDCARD_NAME}}`);
    paths[path] = Object.fromEntries(
      Object.entries(item).map(([method, value]) => [
        method,
        METHODS.has(method) ? describeOperation(method, path, value as Operation, byOperation.get(`${method} ${path}`), names) : value,
      ]),
    );
  }
  const responses = Object.fromEntries(
    Object.entries(SHARED_ERRORS).map(([status, { name, description, headers }]) => [
      name,
      errorResponse(Number(status), description, headers),
    ]),
  );
  const described: Document = {
    ...document,
    paths,
    components: {
      ...document.components,
      schemas: { ...document.components?.schemas, ...names.components, Error: JSON.parse(JSON.stringify(ErrorEnvelope)) },
      responses: { ...document.components?.responses, ...responses },
    },
  };
  return described as D;
}
