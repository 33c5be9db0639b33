import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inlineSchemaRefs } from './inline-schema-refs.js';

/*
 * Generates the Python SDK's operation table, its TypedDicts and its typed domain classes
 * (clients/python/src/switchboard/_operations.py) from the server's OpenAPI document, so the
 * Python client has the same single source of truth as the TypeScript one.
 *   npm run generate:python            writes the file
 *   test/client/python.test.ts         regenerates it in memory and fails when the file is stale
 */

export const PYTHON_OPERATIONS_FILE = 'clients/python/src/switchboard/_operations.py';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  additionalProperties?: boolean | JsonSchema;
  description?: string;
  $ref?: string;
  [key: string]: unknown;
}
interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema: JsonSchema;
}
interface DocOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
  security?: unknown[];
}
export interface OpenApiDocument {
  paths: Record<string, Partial<Record<(typeof METHODS)[number], DocOperation>>>;
}

/** The document the server serves, built in this process on a throwaway SQLite data dir. */
export async function openApiDocument(): Promise<OpenApiDocument> {
  const { createApp } = await import('../src/app.js');
  const { loadConfig } = await import('../src/config.js');
  const { createLogger } = await import('../src/logger.js');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-openapi-'));
  try {
    const config = loadConfig({
      SWITCHBOARD_HOST: '127.0.0.1',
      SWITCHBOARD_PORT: '0',
      SWITCHBOARD_ADMIN_KEY: 'sk_generate_python_0000000000000000',
      SWITCHBOARD_LOG_LEVEL: 'silent',
      SWITCHBOARD_DATA_DIR: dataDir,
    });
    const app = await createApp({ config, logger: createLogger(config) });
    try {
      await app.http.ready();
      return JSON.parse(JSON.stringify(app.http.swagger())) as OpenApiDocument;
    } finally {
      await app.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
const pascal = (name: string) => name.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase()).replace(/_/g, '');
const py = (value: unknown) =>
  JSON.stringify(value)
    .replace(/\btrue\b/g, 'True')
    .replace(/\bfalse\b/g, 'False')
    .replace(/\bnull\b/g, 'None');
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(
    ' ',
  ),
);

/** The keyword arguments a method takes besides its fields; a field of the same name would be ambiguous. */
const RAW_EXTRAS = ['content', 'json', 'content_type', 'params'];
const MULTIPART_EXTRAS = ['file', 'name', 'content_type', 'metadata', 'filename'];

/** A Python type for a JSON schema; objects nested below the top level stay dicts. */
function pyType(schema: JsonSchema | undefined): string {
  if (!schema || schema.$ref) return 'Any';
  if (schema.anyOf) {
    const literals = schema.anyOf.every((s) => Array.isArray(s.enum));
    if (literals)
      return `Literal[${schema.anyOf
        .flatMap((s) => s.enum!)
        .map(py)
        .join(', ')}]`;
    const members = [...new Set(schema.anyOf.map(pyType))];
    return members.includes('Any') ? 'Any' : members.join(' | ');
  }
  if (Array.isArray(schema.enum)) return `Literal[${schema.enum.map(py).join(', ')}]`;
  const type = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (type.length > 1) return [...new Set(type.map((t) => pyType({ ...schema, type: t })))].join(' | ');
  switch (type[0]) {
    case 'string':
      return 'str';
    case 'integer':
      return 'int';
    case 'number':
      return 'float';
    case 'boolean':
      return 'bool';
    case 'null':
      return 'None';
    case 'array':
      return `list[${pyType(schema.items)}]`;
    case 'object': {
      const extra = schema.additionalProperties;
      return `dict[str, ${typeof extra === 'object' && !schema.properties ? pyType(extra) : 'Any'}]`;
    }
    default:
      return 'Any';
  }
}

interface Field {
  name: string;
  type: string;
  required: boolean;
}

/** The fields of an object schema, or of the union of an anyOf of objects (required: in every member). */
function fieldsOf(schema: JsonSchema | undefined, where: string, keywords = false): Field[] | undefined {
  if (!schema) return undefined;
  const members = schema.anyOf ? schema.anyOf.filter((s) => s.type !== 'null') : [schema];
  if (!members.every((s) => s.type === 'object' && s.properties)) return undefined;
  const nullable = schema.anyOf?.some((s) => s.type === 'null') ?? false;
  const fields = new Map<string, Field>();
  for (const member of members) {
    for (const [name, property] of Object.entries(member.properties!)) {
      if (!keywords && (!IDENTIFIER.test(name) || PY_KEYWORDS.has(name)))
        throw new Error(`${where}: field '${name}' is no Python identifier`);
      const required = !nullable && members.every((m) => (m.required ?? []).includes(name));
      const known = fields.get(name);
      fields.set(name, { name, type: known && known.type !== pyType(property) ? 'Any' : pyType(property), required });
    }
  }
  return [...fields.values()];
}

/** A TypedDict (a required base and an optional subclass, which every Python ≥ 3.8 understands). */
function typedDict(name: string, fields: Field[], doc: string): string {
  if (fields.some((f) => !IDENTIFIER.test(f.name) || PY_KEYWORDS.has(f.name))) {
    // A key that is no identifier (an answer's `from`) needs the functional syntax, where every key is optional.
    const keys = fields.map((f) => `${py(f.name)}: ${f.type}`).join(', ');
    return [`${name} = TypedDict(${py(name)}, {${keys}}, total=False)`, `# ${doc}`].join('\n');
  }
  const line = (f: Field) => `    ${f.name}: ${f.type}`;
  const required = fields.filter((f) => f.required);
  const optional = fields.filter((f) => !f.required);
  const out: string[] = [];
  if (required.length > 0 && optional.length > 0) {
    out.push(`class _${name}Required(TypedDict):`, ...required.map(line), '', '');
    out.push(`class ${name}(_${name}Required, total=False):`, `    """${doc}"""`, '', ...optional.map(line));
  } else {
    out.push(`class ${name}(TypedDict${required.length > 0 ? '' : ', total=False'}):`, `    """${doc}"""`);
    out.push(...(fields.length > 0 ? ['', ...fields.map(line)] : []));
  }
  return out.join('\n');
}

function successSchema(operation: DocOperation): { json?: JsonSchema; bytes: boolean } {
  for (const [status, response] of Object.entries(operation.responses)) {
    if (!status.startsWith('2')) continue;
    const json = response.content?.['application/json']?.schema;
    return json?.properties?.data ? { json: json.properties.data, bytes: false } : { bytes: true };
  }
  return { bytes: true };
}

interface GeneratedOperation {
  domain: string;
  name: string;
  method: string;
  path: string;
  summary: string;
  pathParams: Field[];
  queryParams: Field[];
  /** 'json' (fields of a JSON object), 'multipart' (a form with a file), 'raw' (any bytes or JSON), 'none'. */
  body: 'json' | 'multipart' | 'raw' | 'none';
  bodyFields: Field[];
  bodyRequired: boolean;
  data?: JsonSchema;
  paged: boolean;
  itemsKey: string | null;
  public: boolean;
  bytes: boolean;
}

function operationsOf(doc: OpenApiDocument): GeneratedOperation[] {
  const operations: GeneratedOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const id = operation.operationId;
      const match = id?.match(/^([a-z]+)_([A-Za-z0-9]+)$/);
      if (!match) throw new Error(`${method.toUpperCase()} ${path}: operationId '${id}' is not domain_name`);
      const [, domain, name] = match as [string, string, string];
      const where = `${domain}.${name}`;
      const parameters = operation.parameters ?? [];
      const param = (p: Parameter): Field => ({
        name: p.name,
        type: p.in === 'path' ? 'str | int' : pyType(p.schema),
        required: p.in === 'path' || Boolean(p.required),
      });
      const pathParams = parameters.filter((p) => p.in === 'path').map(param);
      const queryParams = parameters.filter((p) => p.in === 'query').map(param);
      const bodySchema = operation.requestBody?.content['application/json']?.schema;
      const text = `${operation.summary ?? ''} ${operation.description ?? ''}`;
      let body: GeneratedOperation['body'] = 'none';
      let bodyFields: Field[] = [];
      if (bodySchema) {
        const fields = fieldsOf(bodySchema, where);
        if (!fields) throw new Error(`${where}: a request body that is not an object`);
        body = 'json';
        bodyFields = fields;
      } else if (text.includes('multipart')) {
        body = 'multipart';
      } else if (method !== 'get' && method !== 'delete') {
        body = 'raw';
      }
      const taken = new Set([...pathParams, ...queryParams].map((f) => f.name));
      for (const field of bodyFields)
        if (taken.has(field.name)) throw new Error(`${where}: '${field.name}' is both a parameter and a body field`);
      const extras = body === 'multipart' ? MULTIPART_EXTRAS : body === 'raw' ? RAW_EXTRAS : [];
      for (const extra of [...extras, 'params'])
        if (taken.has(extra)) throw new Error(`${where}: parameter '${extra}' collides with the method's own keyword`);
      const { json: data, bytes } = successSchema(operation);
      const names = new Set(queryParams.map((p) => p.name));
      const response = Object.entries(operation.responses).find(([status]) => status.startsWith('2'))?.[1];
      const meta = response?.content?.['application/json']?.schema?.properties?.meta?.properties ?? {};
      const paged = names.has('limit') && names.has('offset') && 'total' in meta;
      let itemsKey: string | null = null;
      if (paged && data?.type !== 'array') {
        const lists = Object.entries(data?.properties ?? {}).filter(([, s]) => s.type === 'array');
        if (lists.length !== 1) throw new Error(`${where}: paginated, but its data is no list and holds ${lists.length} lists`);
        itemsKey = lists[0]![0];
      }
      operations.push({
        domain,
        name,
        method: method.toUpperCase(),
        path,
        summary: (operation.summary ?? '').replace(/\s+/g, ' ').replace(/"""/g, "'''").replace(/\\/g, '\\\\'),
        pathParams,
        queryParams,
        body,
        bodyFields,
        bodyRequired: Boolean(operation.requestBody?.required) && !bodySchema?.anyOf?.some((s) => s.type === 'null'),
        ...(data ? { data } : {}),
        paged,
        itemsKey,
        public: operation.security?.length === 0,
        bytes,
      });
    }
  }
  return operations;
}

const HEADER = `# Generated by scripts/generate-python.ts from the server's OpenAPI document: do not edit.
# Regenerate with \`npm run generate:python\`; \`npm test\` fails when this file is stale.
"""Every operation of the Switchboard API: the table the client is driven by, the TypedDicts of
their arguments and answers, and one typed method per operation, grouped by domain."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ._base import Domain, Operation, Paged, StreamedResponse

if TYPE_CHECKING:
    from ._types import Content, FileInput

    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:  # pragma: no cover
        from typing_extensions import Unpack
`;

/** The whole of _operations.py for this document. */
export function renderPythonOperations(doc: OpenApiDocument): string {
  // The TypedDicts are written per operation: a named schema reads as any other there.
  const operations = operationsOf(inlineSchemaRefs(doc));
  const domains = [...new Set(operations.map((o) => o.domain))];
  const out: string[] = [HEADER];

  const typeName = (o: GeneratedOperation) => `${pascal(o.domain)}${o.name[0]!.toUpperCase()}${o.name.slice(1)}`;
  for (const o of operations) {
    const base = typeName(o);
    const args: Field[] = [...o.pathParams, ...o.queryParams];
    if (o.body === 'json') {
      out.push('', '', typedDict(`${base}Body`, o.bodyFields, `The JSON body of ${o.domain}.${snake(o.name)}.`));
      args.push(...o.bodyFields.map((f) => ({ ...f, required: f.required && o.bodyRequired })));
    } else if (o.body === 'multipart') {
      args.push(
        { name: 'file', type: 'FileInput', required: true },
        { name: 'name', type: 'str', required: false },
        { name: 'filename', type: 'str', required: false },
        { name: 'content_type', type: 'str', required: false },
        { name: 'metadata', type: 'dict[str, Any]', required: false },
      );
    } else if (o.body === 'raw') {
      args.push(
        { name: 'content', type: 'Content', required: false },
        { name: 'json', type: 'Any', required: false },
        { name: 'content_type', type: 'str', required: false },
      );
    }
    // A hook (its path a wildcard) takes any query, which becomes the event's query.
    if (o.pathParams.some((p) => p.name === 'path')) args.push({ name: 'params', type: 'dict[str, Any]', required: false });
    out.push('', '', typedDict(`${base}Args`, args, `The keyword arguments of ${o.domain}.${snake(o.name)}.`));
    if (o.data) {
      const item = o.paged ? (o.itemsKey ? o.data.properties![o.itemsKey]!.items : o.data.items) : undefined;
      const itemFields = item ? fieldsOf(item, `${o.domain}.${o.name} items`, true) : undefined;
      if (itemFields) out.push('', '', typedDict(`${base}Item`, itemFields, `One item of ${o.domain}.${snake(o.name)}.`));
      const target = o.data.type === 'array' ? o.data.items : o.data;
      const dataFields = o.data.type === 'array' && itemFields ? undefined : fieldsOf(target, `${o.domain}.${o.name} data`, true);
      if (dataFields && o.data.type === 'array') {
        out.push('', '', typedDict(`${base}Element`, dataFields, `One element of what ${o.domain}.${snake(o.name)} returns.`));
      } else if (dataFields) {
        out.push('', '', typedDict(`${base}Data`, dataFields, `What ${o.domain}.${snake(o.name)} returns.`));
      }
    }
  }

  const resultType = (o: GeneratedOperation): string => {
    const base = typeName(o);
    if (o.bytes) return 'StreamedResponse';
    if (o.paged)
      return fieldsOf(o.itemsKey ? o.data!.properties![o.itemsKey]!.items : o.data!.items, '', true) ? `Paged[${base}Item]` : 'Paged[Any]';
    if (o.data?.type === 'array') return fieldsOf(o.data.items, '', true) ? `list[${base}Element]` : pyType(o.data);
    return fieldsOf(o.data, '', true) ? `${base}Data` : pyType(o.data);
  };

  out.push('', '', '# The operation table: domain → method name → how to call it.', 'OPERATIONS: dict[str, dict[str, Operation]] = {');
  for (const domain of domains) {
    out.push(`    ${py(domain)}: {`);
    for (const o of operations.filter((x) => x.domain === domain)) {
      out.push(
        `        ${py(snake(o.name))}: Operation(`,
        `            operation_id=${py(`${o.domain}_${o.name}`)},`,
        `            method=${py(o.method)},`,
        `            path=${py(o.path)},`,
        `            path_params=(${o.pathParams.map((p) => `${py(p.name)},`).join(' ')}),`,
        `            query_params=(${o.queryParams.map((p) => `${py(p.name)},`).join(' ')}),`,
        `            body=${py(o.body)},`,
        `            body_fields=(${o.bodyFields.map((p) => `${py(p.name)},`).join(' ')}),`,
        `            paged=${py(o.paged)},`,
        `            items_key=${py(o.itemsKey)},`,
        `            public=${py(o.public)},`,
        `            streamed=${py(o.bytes)},`,
        '        ),',
      );
    }
    out.push('    },');
  }
  out.push('}');

  for (const domain of domains) {
    out.push('', '', `class ${pascal(domain)}Operations(Domain):`, `    """The ${domain} operations."""`);
    for (const o of operations.filter((x) => x.domain === domain)) {
      const name = snake(o.name);
      out.push(
        '',
        `    def ${name}(self, **arguments: Unpack[${typeName(o)}Args]) -> ${resultType(o)}:`,
        `        """${o.summary || `${o.method} ${o.path}`} (${o.method} ${o.path})."""`,
        `        return self._call(${py(name)}, arguments)  # type: ignore[no-any-return]`,
      );
    }
  }
  out.push(
    '',
    '',
    'class ClientDomains:',
    '    """The domains of the client, one attribute each."""',
    '',
    ...domains.map((d) => `    ${d}: ${pascal(d)}Operations`),
  );
  out.push('', '', 'DOMAINS: dict[str, type[Domain]] = {', ...domains.map((d) => `    ${py(d)}: ${pascal(d)}Operations,`), '}', '');
  return out.join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const doc = await openApiDocument();
  fs.writeFileSync(PYTHON_OPERATIONS_FILE, renderPythonOperations(doc));
  console.warn(`wrote ${PYTHON_OPERATIONS_FILE}`);
}
