/**
 * Hostile requests for every operation of the served OpenAPI document, as fast-check
 * arbitraries: mostly shaped like the operation's schemas, so that they get past validation
 * and reach the services, with hostile values mixed in (NUL characters, numbers no column
 * holds, deep nesting, wrong types, long strings, bad %-escapes). Shared by the property test
 * in `npm test` (test/fuzz/api.test.ts) and the long run of bench/fuzz.ts.
 */
import fc from 'fast-check';
import { inlineSchemaRefs } from '../../scripts/inline-schema-refs.js';

type Schema = Record<string, any>;

interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema: Schema;
}

export interface Operation {
  method: string;
  /** The path template, `{name}` for parameters. */
  path: string;
  parameters: Parameter[];
  body?: Schema;
  /** Whether the document lists a 409 for it (its route declares when it conflicts). */
  conflicts: boolean;
}

export interface FuzzRequest {
  method: string;
  /** Path and query, percent-encoded (or deliberately not). */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** The operation's: whether a 409 is documented. */
  conflicts: boolean;
}

/** Every documented operation of an OpenAPI document. */
export function operationsOf(document: { paths: Record<string, Record<string, any>> }): Operation[] {
  const doc = inlineSchemaRefs(document);
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const json = operation.requestBody?.content?.['application/json']?.schema;
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: operation.parameters ?? [],
        body: json,
        conflicts: '409' in (operation.responses ?? {}),
      });
    }
  }
  return operations;
}

/** A value serialized as raw JSON text (a number JSON.stringify cannot write, deep nesting). */
const RAW = '\u0001raw:';
const raw = (text: string) => `${RAW}${text}`;
const RAW_IN_JSON = /"\\u0001raw:([^"]*)"/g;

export function toJson(value: unknown): string {
  return JSON.stringify(value).replace(RAW_IN_JSON, (_match, text: string) => text);
}

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** Text no column should take, or that no parser should trip on. */
const hostileText = fc.constantFrom(
  'a\u0000b',
  '\u0000',
  'x'.repeat(5_000),
  '1e400',
  'Infinity',
  '-1',
  '99999999999999999999',
  '',
  ' ',
  '../../etc/passwd',
  "'; DROP TABLE tasks; --",
  '\ud800',
  '😀'.repeat(50),
  '{"a":1}',
  '%',
  '*',
  '>',
);

/** JSON values of the wrong kind, size or depth for almost any field. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileText,
  fc.constantFrom(
    raw('1e400'),
    raw('-1e400'),
    raw('1e20'),
    2 ** 31,
    2 ** 53,
    -(2 ** 63),
    -1,
    0,
    1.5,
    true,
    null,
    [],
    {},
    raw(nested(70)),
    raw(nested(5_000)),
    { ['k\u0000']: 'v' },
    Array.from({ length: 300 }, (_, i) => i),
  ),
);

/**
 * Objects that exist, by a path segment that names their kind (`/tasks/`: a task id), so that
 * a path parameter can name one of the right kind and get past "not found".
 */
export type Seeds = Record<string, string>;

/** The seeded id whose kind the path names last before `{name}`, if any. */
function seedFor(path: string, name: string, seeds: Seeds): string | undefined {
  const before = path.slice(0, path.indexOf(`{${name}}`));
  let best: [number, string] | undefined;
  for (const [segment, id] of Object.entries(seeds)) {
    const at = before.lastIndexOf(segment);
    if (at >= 0 && (!best || at > best[0])) best = [at, id];
  }
  return best?.[1];
}

/** Path and query text: hostile, or the ids of objects that exist (to reach the services). */
function textFor(ids: string[], likely?: string, likelyWeight = 8): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: likely === undefined ? 0 : likelyWeight, arbitrary: fc.constant(likely ?? 'x') },
    { weight: 3, arbitrary: ids.length > 0 ? fc.constantFrom(...ids) : fc.constant('x') },
    { weight: 3, arbitrary: hostileText },
    { weight: 1, arbitrary: fc.constantFrom('%zz', '%', '%E0%A4%A', 'x'.repeat(600)).map((text) => `\u0002${text}`) },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  );
}

/** A value shaped by `schema` (valid or close to it), with hostile ones mixed in at every level. */
export function valueFor(schema: Schema | undefined, ids: string[], depth = 0): fc.Arbitrary<unknown> {
  const shaped = shapedValue(schema ?? {}, ids, depth);
  return fc.oneof({ weight: 15, arbitrary: shaped }, { weight: 1, arbitrary: hostileValue });
}

/** Strings a pattern matches; fast-check builds none for lookaheads (reserved names), so any string then. */
function matching(pattern: string): fc.Arbitrary<string> {
  try {
    return fc.stringMatching(new RegExp(pattern));
  } catch {
    return fc.string({ maxLength: 20 });
  }
}

function shapedValue(schema: Schema, ids: string[], depth: number): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum)) {
    return fc.oneof(
      { weight: 10, arbitrary: fc.constantFrom(...(schema.enum as unknown[])) },
      { weight: 1, arbitrary: fc.constant('not-one-of-them') },
    );
  }
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (branches) return fc.oneof(...branches.map((branch) => shapedValue(branch, ids, depth)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string': {
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      if (typeof schema.pattern === 'string') return fc.oneof(matching(schema.pattern), fc.constantFrom(...ids, 'x'));
      return fc.oneof(
        fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 20, 20) }),
        fc.constantFrom(...ids, 'x'),
      );
    }
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -5, max: Math.min(schema.maximum ?? 1_000, 1_000) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -5, max: Math.min(schema.maximum ?? 1_000, 1_000), noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      if (depth > 4) return fc.constant([]);
      return fc.array(valueFor(schema.items, ids, depth + 1), { maxLength: 3 });
    case 'object': {
      if (depth > 4) return fc.constant({});
      const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
      const required = new Set((schema.required ?? []) as string[]);
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of properties) record[name] = valueFor(property, ids, depth + 1);
      const known = fc.record(record, { requiredKeys: properties.map(([name]) => name).filter((name) => required.has(name)) });
      if (properties.length > 0) return known;
      return fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), hostileText), valueFor({}, ids, depth + 1), { maxKeys: 3 });
    }
    default:
      return depth > 3 ? fc.jsonValue({ maxDepth: 1 }) : fc.oneof(fc.jsonValue({ maxDepth: 2 }), hostileValue);
  }
}

/** Percent-encodes text for a URL, except text marked to go in as it is (a bad escape). */
function encode(text: string): string {
  if (text.startsWith('\u0002')) return text.slice(1);
  try {
    return encodeURIComponent(text);
  } catch {
    // A lone surrogate has no UTF-8: send the bytes it would have been, which are not UTF-8.
    return '%ED%A0%80';
  }
}

/**
 * A request for `operation`: its path parameters and query from `textFor`, a body shaped by
 * its schema (or, now and then, broken JSON or no body), with the admin key most of the time.
 */
export function requestFor(operation: Operation, seeds: Seeds, adminKey: string): fc.Arbitrary<FuzzRequest> {
  const ids = Object.values(seeds);
  const pathParams = operation.parameters.filter((p) => p.in === 'path');
  const queryParams = operation.parameters.filter((p) => p.in === 'query');
  const text = textFor(ids);
  const queryValue = (parameter: Parameter) =>
    // A receive's `timeout` is a long poll of up to 30 s: only values that do not wait.
    parameter.name === 'timeout'
      ? fc.constantFrom('0', '-1', 'x', 'a\u0000b', '')
      : fc.oneof(
          { weight: 4, arbitrary: shapedValue(parameter.schema, ids, 3).map((value) => String(value)) },
          { weight: 1, arbitrary: text },
        );
  const query = fc.record(
    Object.fromEntries(queryParams.map((parameter) => [parameter.name, fc.array(queryValue(parameter), { minLength: 1, maxLength: 2 })])),
    { requiredKeys: [] },
  );
  const body = operation.body
    ? fc.oneof(
        { weight: 8, arbitrary: valueFor(operation.body, ids).map(toJson) },
        { weight: 1, arbitrary: fc.constantFrom('{"a":', '', 'null', '[]', '"\\u0000"', nested(100), '{"a":1e400}') },
      )
    : fc.constant(undefined);
  const credentials = fc.oneof(
    { weight: 18, arbitrary: fc.constant('admin' as const) },
    { weight: 1, arbitrary: fc.constantFrom('none' as const, 'bad' as const) },
  );
  return fc
    .record({
      // A delete seldom names a seeded object: the others would find it gone.
      params: fc.tuple(
        ...pathParams.map((parameter) =>
          textFor(ids, seedFor(operation.path, parameter.name, seeds), operation.method === 'DELETE' ? 1 : 8),
        ),
      ),
      query,
      body,
      credentials,
      requestId: fc.option(fc.constantFrom('trace-1', 'bad id', 'x'.repeat(300)), { nil: undefined }),
    })
    .map(({ params, query: values, body: json, credentials: who, requestId }) => {
      let path = operation.path;
      pathParams.forEach((parameter, i) => (path = path.replace(`{${parameter.name}}`, encode(params[i]!))));
      const pairs = Object.entries(values as Record<string, string[]>).flatMap(([name, list]) =>
        list.map((value) => `${name}=${encode(value)}`),
      );
      const headers: Record<string, string> = {};
      if (who === 'admin') headers.authorization = `Bearer ${adminKey}`;
      if (who === 'bad') headers.authorization = 'Bearer sk_not_a_key';
      if (requestId !== undefined) headers['x-request-id'] = requestId;
      if (json !== undefined) headers['content-type'] = 'application/json';
      return {
        method: operation.method,
        url: pairs.length > 0 ? `${path}?${pairs.join('&')}` : path,
        headers,
        body: json,
        conflicts: operation.conflicts,
      };
    });
}

/** Any operation's request: the arbitrary both the property test and the long run draw from. */
export function anyRequest(operations: Operation[], seeds: Seeds, adminKey: string): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(...operations.map((operation) => requestFor(operation, seeds, adminKey)));
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** Sends a fuzzed request to the server at `baseUrl`; rejects when no answer comes within `timeoutMs`. */
export async function send(baseUrl: string, request: FuzzRequest, timeoutMs: number): Promise<Answer> {
  const res = await fetch(baseUrl + request.url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  // An event stream that opened never ends by itself: its answer is the status and headers.
  if (res.ok && (res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    await res.body?.cancel();
    return { status: res.status, headers: res.headers, text: '' };
  }
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A request in one line, for a failure's message. */
export const describeRequest = (request: FuzzRequest) =>
  `${request.method} ${request.url.slice(0, 160)} ${request.body?.slice(0, 200) ?? ''}`;

/**
 * What is wrong with the answer to `request`, or null: never a 5xx, never a 409 the operation
 * does not document, and every error in the envelope with the request id of its X-Request-ID
 * header.
 */
export function problemWith(answer: Answer, request: FuzzRequest): string | null {
  if (answer.status >= 500) return `${answer.status}: ${answer.text.slice(0, 300)}`;
  if (answer.status < 400) return null;
  if (answer.status === 409 && !request.conflicts)
    return `409, which the document does not list for the operation: ${answer.text.slice(0, 200)}`;
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `${answer.status} without a JSON body: ${answer.text.slice(0, 200)}`;
  }
  const id = answer.headers.get('x-request-id');
  if (typeof body?.error?.code !== 'string' || typeof body.error.message !== 'string')
    return `${answer.status} outside the envelope: ${answer.text.slice(0, 200)}`;
  if (!id || body.meta?.request_id !== id)
    return `${answer.status} ${body.error.code} without its request id (header ${id}, body ${body.meta?.request_id})`;
  return null;
}

/**
 * Objects the fuzzed requests can name in their paths (a task, a plan, a routine with a
 * webhook, an artifact, an agent), so that requests get past "not found" to the services.
 */
let seedings = 0;

export async function seedObjects(baseUrl: string, adminKey: string): Promise<Seeds> {
  const alias = `fuzzed-${++seedings}`;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(baseUrl + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const parsed = (await res.json()) as { data?: Record<string, any> };
    if (!res.ok || !parsed.data) throw new Error(`seeding ${path} failed: ${res.status} ${JSON.stringify(parsed)}`);
    return parsed.data;
  };
  const task = await post('/core/api/v1/tasks', { title: 'fuzzed' });
  const project = await post('/core/api/v1/projects', { name: 'fuzzed' });
  const routine = await post('/core/api/v1/routines', { name: 'fuzzed', trigger_type: 'webhook', target_agent: 'fuzz-agent' });
  const plan = await post('/api/v1/coordination/plans', { alias, steps: [{ id: 'a', type: 'agent', agent: 'fuzz-agent', input: {} }] });
  const run = await post('/api/v1/coordination/runs', { plan_id: plan.id, input: {} });
  const artifact = await post('/api/v1/artifacts/snippets', { name: 'fuzzed.json', content: { a: 1 } });
  await post('/api/v1/discovery/capabilities', { agent_id: 'fuzz-agent', capability: 'fuzz.target' });
  await post('/api/v1/discovery/heartbeat', { agent_id: 'fuzz-agent' });
  // Port 9 (discard): nothing listens, so its deliveries fail at once.
  const webhook = await post('/api/v1/webhooks', { url: 'http://127.0.0.1:9/fuzzed', types: ['task.>'] });
  return {
    '/tasks/': task.id,
    '/projects/': project.id,
    '/routines/': routine.id,
    '/webhook/': routine.webhook_token,
    '/plans/': plan.id,
    '/versions/': '1',
    '/steps/': 'a',
    '/runs/': run.id,
    '/artifacts/': artifact.id,
    '/agents/': 'fuzz-agent',
    '/groups/': 'default',
    '/webhooks/': webhook.id,
  };
}
