import { describe, expect, it } from 'vitest';
import { inlineSchemaRefs } from '../../scripts/inline-schema-refs.js';
import { BYTE_ANSWERS } from '#client/operations.js';
import { OPERATIONS, PAGED, PUBLIC, type OperationKey } from '../../src/client/index.js';
import { SCHEMAS, type OperationSchema } from '../../src/http/operation-schemas.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

/*
 * The SDK is a table of operations (operations.ts) and their schemas (http/operation-schemas.ts, the source of
 * its types). Both are compared here with the OpenAPI document the server serves: any operation,
 * method, path, pagination, request body, query parameter or result that differs is listed.
 */

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

interface DocOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: Array<{ in: string; name: string; required?: boolean; schema: unknown }>;
  requestBody?: { required?: boolean; content: Record<string, { schema?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
  security?: unknown[];
}
interface JsonSchema {
  properties?: Record<string, JsonSchema>;
  required?: string[];
  [key: string]: unknown;
}
type Doc = { paths: Record<string, Partial<Record<(typeof METHODS)[number], DocOperation>>> };
type Table = Record<string, Record<string, readonly string[]>>;

/** Drops what does not change what is valid (descriptions, examples) and spells `const` as the document does. */
function normalize(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(normalize);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(schema).sort()) {
    const value = (schema as Record<string, unknown>)[key];
    if (key === 'description' || key === 'examples' || key === 'title' || key === '$id') continue;
    if (key === 'const') out.enum = [value];
    // TypeBox writes a record as patternProperties; the document as additionalProperties.
    else if (key === 'patternProperties' && Object.keys(value as object).join() === '^(.*)$')
      out.additionalProperties = normalize((value as Record<string, unknown>)['^(.*)$']);
    else if (key === 'required' && Array.isArray(value)) out.required = [...(value as string[])].sort();
    else out[key] = normalize(value);
  }
  // In key order again: a renamed key (patternProperties → additionalProperties) lands out of it.
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}
const plain = (schema: unknown) => normalize(JSON.parse(JSON.stringify(schema)));

/** Where two normalized schemas first differ, as a path with both values ('' when equal). */
function firstDifference(sdk: unknown, doc: unknown, at = ''): string {
  if (JSON.stringify(sdk) === JSON.stringify(doc)) return '';
  if (sdk && doc && typeof sdk === 'object' && typeof doc === 'object' && Array.isArray(sdk) === Array.isArray(doc)) {
    const a = sdk as Record<string, unknown>;
    const b = doc as Record<string, unknown>;
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const found = firstDifference(a[key], b[key], `${at}/${key}`);
      if (found) return found;
    }
  }
  return `at ${at || '/'}: SDK ${JSON.stringify(sdk)?.slice(0, 200)}, document ${JSON.stringify(doc)?.slice(0, 200)}`;
}

function documentedOperations(doc: Doc): Map<string, DocOperation> {
  const operations = new Map<string, DocOperation>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation) operations.set(`${method.toUpperCase()} ${path}`, operation);
    }
  }
  return operations;
}

/** Differences between the SDK's operation table and the document's operations, methods and paths. */
function operationDifferences(table: Table, doc: Doc): string[] {
  const documented = documentedOperations(doc);
  const inSdk = new Map<string, string>();
  for (const [domain, operations] of Object.entries(table)) {
    for (const [name, [method, path]] of Object.entries(operations)) inSdk.set(`${method} ${path}`, `${domain}.${name}`);
  }
  return [
    ...[...documented.keys()].filter((op) => !inSdk.has(op)).map((op) => `not in the SDK: ${op}`),
    ...[...inSdk].filter(([op]) => !documented.has(op)).map(([op, key]) => `not documented: ${key} = ${op}`),
  ].sort();
}

/** Operations whose documented operationId is not the SDK's name for them (`domain_name`). */
function operationIdDifferences(table: Table, doc: Doc): string[] {
  const documented = documentedOperations(doc);
  const problems: string[] = [];
  for (const [domain, operations] of Object.entries(table)) {
    for (const [name, [method, path]] of Object.entries(operations)) {
      const operationId = documented.get(`${method} ${path}`)?.operationId;
      if (operationId !== `${domain}_${name}`) problems.push(`${domain}.${name}: operationId ${operationId}`);
    }
  }
  return problems;
}

function jsonResponse(operation: DocOperation): JsonSchema | undefined {
  for (const [status, response] of Object.entries(operation.responses)) {
    if (status.startsWith('2')) return response.content?.['application/json']?.schema;
  }
  return undefined;
}

/** Differences between one operation's schemas in the SDK and in the document. */
function schemaDifferences(key: string, sdk: OperationSchema, doc: DocOperation): string[] {
  const problems: string[] = [];
  const body = doc.requestBody?.content['application/json']?.schema;
  if (sdk.body === undefined) {
    if (body !== undefined && sdk.content !== 'any') problems.push(`${key}: the document has a JSON body, the SDK none`);
  } else if (body === undefined) {
    problems.push(`${key}: the SDK has a JSON body, the document none`);
  } else {
    const difference = firstDifference(plain(sdk.body), normalize(body));
    if (difference) problems.push(`${key}: the request bodies differ ${difference}`);
    // A body that may be null may be left out (an empty body is no body).
    const optional =
      !doc.requestBody?.required || ((body as JsonSchema).anyOf as JsonSchema[] | undefined)?.some((s) => s.type === 'null') === true;
    if (optional !== Boolean(sdk.optionalBody)) problems.push(`${key}: the body is required in one, optional in the other`);
  }
  if (sdk.content === 'multipart' && !`${doc.summary} ${doc.description}`.includes('multipart'))
    problems.push(`${key}: the document takes no multipart form`);

  const parameters = (doc.parameters ?? []).filter((p) => p.in === 'query');
  const query = sdk.query ? (plain(sdk.query) as JsonSchema) : { properties: {}, required: [] };
  const names = Object.keys(query.properties ?? {}).sort();
  if (JSON.stringify(names) !== JSON.stringify(parameters.map((p) => p.name).sort())) {
    problems.push(`${key}: query parameters differ: SDK ${names.join(',')}; document ${parameters.map((p) => p.name).join(',')}`);
  } else {
    for (const parameter of parameters) {
      const mine = query.properties?.[parameter.name];
      const difference = firstDifference(mine, normalize(parameter.schema));
      if (difference) problems.push(`${key}: query parameter ${parameter.name} differs ${difference}`);
      if (Boolean(parameter.required) !== (query.required ?? []).includes(parameter.name))
        problems.push(`${key}: query parameter ${parameter.name} required differs`);
    }
  }

  const data = jsonResponse(doc)?.properties?.data;
  if ((sdk.data === undefined) !== BYTE_ANSWERS.has(key))
    problems.push(`${key}: BYTE_ANSWERS and operation-schemas.ts disagree on whether it answers bytes`);
  if (sdk.data === undefined) {
    if (data !== undefined) problems.push(`${key}: the document answers JSON data, the SDK expects bytes`);
  } else if (data === undefined) {
    problems.push(`${key}: the SDK expects JSON data, the document answers none`);
  } else {
    const difference = firstDifference(plain(sdk.data), normalize(data));
    if (difference) problems.push(`${key}: the results differ ${difference}`);
  }
  return problems;
}

function allSchemaDifferences(doc: Doc): string[] {
  const documented = documentedOperations(doc);
  const problems: string[] = [];
  for (const [domain, operations] of Object.entries(OPERATIONS as unknown as Table)) {
    for (const [name, [method, path, flag, itemsKey]] of Object.entries(operations)) {
      const key = `${domain}.${name}` as OperationKey;
      const operation = documented.get(`${method} ${path}`);
      if (!operation) continue; // reported by operationDifferences
      problems.push(...schemaDifferences(key, SCHEMAS[key], operation));
      // Paginated: limit and offset in, total out; the SDK's .all() relies on exactly that.
      const parameters = new Set((operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name));
      const meta = jsonResponse(operation)?.properties?.meta?.properties ?? {};
      const paged = parameters.has('limit') && parameters.has('offset') && 'total' in meta;
      if (paged !== (flag === PAGED)) problems.push(`${key}: ${paged ? 'paginated' : 'not paginated'} in the document, not in the SDK`);
      // .all() and .page() read the items from the data, or from the list the operation names in it.
      const data = jsonResponse(operation)?.properties?.data;
      const items = itemsKey === undefined ? data : data?.properties?.[itemsKey];
      if (flag === PAGED && items?.type !== 'array')
        problems.push(`${key}: the document's ${itemsKey === undefined ? 'data' : `data.${itemsKey}`} is not a list`);
      const publicInDoc = operation.security?.length === 0;
      if (publicInDoc !== (flag === PUBLIC))
        problems.push(`${key}: ${publicInDoc ? 'public' : 'authenticated'} in the document, not in the SDK`);
    }
  }
  return problems;
}

describeEachDialect('SDK operations match the OpenAPI document', (dialect) => {
  const server = useServer(dialect);
  const fetchDoc = async () => {
    const res = await server.api.get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    // Named schemas are compared by what they stand for, wherever they are used.
    return inlineSchemaRefs(res.body as Doc);
  };

  it('every documented operation is in the SDK and every SDK operation is documented, with the same method and path', async () => {
    const doc = await fetchDoc();
    expect(operationDifferences(OPERATIONS as unknown as Table, doc)).toEqual([]);
  });

  it("every operation's operationId is the SDK's name for it, once", async () => {
    const doc = await fetchDoc();
    expect(operationIdDifferences(OPERATIONS as unknown as Table, doc)).toEqual([]);
    const ids = [...documentedOperations(doc).values()].map((operation) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const renamed = structuredClone(OPERATIONS) as unknown as Record<string, Record<string, string[]>>;
    renamed.messaging!.post = renamed.messaging!.send!;
    delete renamed.messaging!.send;
    expect(operationIdDifferences(renamed, doc)).toEqual(['messaging.post: operationId messaging_send']);
  });

  it("every operation's request body, query parameters, result and pagination match the SDK's types", async () => {
    expect(allSchemaDifferences(await fetchDoc())).toEqual([]);
  });

  it('the comparison reports an operation whose path or method differs', async () => {
    const doc = await fetchDoc();
    const wrongPath = structuredClone(OPERATIONS) as unknown as Record<string, Record<string, string[]>>;
    wrongPath.tasks!.get = ['GET', '/core/api/v1/task/{id}'];
    expect(operationDifferences(wrongPath, doc)).toEqual([
      'not documented: tasks.get = GET /core/api/v1/task/{id}',
      'not in the SDK: GET /core/api/v1/tasks/{id}',
    ]);
    const wrongMethod = structuredClone(OPERATIONS) as unknown as Record<string, Record<string, string[]>>;
    wrongMethod.tasks!.update = ['PUT', '/core/api/v1/tasks/{id}'];
    expect(operationDifferences(wrongMethod, doc)).toEqual([
      'not documented: tasks.update = PUT /core/api/v1/tasks/{id}',
      'not in the SDK: PATCH /core/api/v1/tasks/{id}',
    ]);
  });
});

describe('SDK schema comparison', () => {
  it('reports a body field, a query parameter and a result that differ', () => {
    const doc: DocOperation = {
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } },
      },
      parameters: [{ in: 'query', name: 'limit', schema: { type: 'integer' } }],
      responses: {
        '200': {
          content: {
            'application/json': {
              schema: { properties: { data: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } } },
            },
          },
        },
      },
    };
    const same: OperationSchema = {
      body: { type: 'object', properties: { name: { type: 'string', description: 'ignored' } }, required: ['name'] },
      query: { type: 'object', properties: { limit: { type: 'integer' } } },
      data: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    } as unknown as OperationSchema;
    expect(schemaDifferences('x.y', same, doc)).toEqual([]);
    const different = {
      body: { type: 'object', properties: { nam: { type: 'string' } }, required: ['nam'] },
      query: { type: 'object', properties: { limt: { type: 'integer' } } },
      data: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
    } as unknown as OperationSchema;
    expect(schemaDifferences('x.y', different, doc)).toEqual([
      'x.y: the request bodies differ at /properties/nam: SDK {"type":"string"}, document undefined',
      'x.y: query parameters differ: SDK limt; document limit',
      'x.y: the results differ at /properties/id/type: SDK "integer", document "string"',
    ]);
  });
});
