import fastJson from 'fast-json-stringify';

type Schema = Record<string, unknown>;

const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);
/** Keywords that hold one subschema, or a map / list of them. */
const SUBSCHEMA = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains'] as const;
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', 'definitions', '$defs'] as const;
const SUBSCHEMA_LISTS = ['allOf', 'oneOf', 'prefixItems'] as const;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A union branch the serializer can write from its `type` alone: a scalar, a literal, a formatted string. */
function isScalar(option: unknown): option is Schema & { type: string } {
  if (!isSchema(option) || typeof option.type !== 'string' || !SCALAR_TYPES.has(option.type)) return false;
  return option.anyOf === undefined && option.oneOf === undefined && option.allOf === undefined;
}

/** `Type.Record(Type.String(), Type.Unknown())`: an object of any keys and any values. */
function isFreeFormObject(schema: Schema): boolean {
  if (schema.type !== 'object' || schema.properties !== undefined || schema.additionalProperties !== undefined) return false;
  const patterns = schema.patternProperties;
  if (!isSchema(patterns)) return false;
  const entries = Object.entries(patterns);
  return entries.length === 1 && isSchema(entries[0]![1]) && Object.keys(entries[0]![1]).length === 0;
}

/**
 * The response schema as the serializer should see it. fast-json-stringify writes a union
 * (`anyOf`) by running Ajv against each branch until one matches, for every field and every
 * list entry: with a date-time format check, about 10 µs per nullable timestamp (profiled).
 * Nearly all of our response unions are "T or null" and "one of these strings", which one
 * JSON Schema `type` (a list of types) states equally well and the serializer writes without
 * Ajv. Other unions (objects or arrays in a branch) stay as they are. Free-form objects (any
 * keys, any values) lose their schema, so the serializer writes them with JSON.stringify. Only
 * serialization sees this copy: validation and the OpenAPI document keep the schemas as written.
 */
export function forSerialization(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forSerialization);
  if (!isSchema(schema)) return schema;
  // String keys only: TypeBox's symbol keys mean nothing to the serializer.
  const out: Schema = Object.fromEntries(Object.entries(schema));
  for (const key of SUBSCHEMA) if (key in out) out[key] = forSerialization(out[key]);
  for (const key of SUBSCHEMA_LISTS) if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map(forSerialization);
  for (const key of SUBSCHEMA_MAPS) {
    if (isSchema(out[key])) out[key] = Object.fromEntries(Object.entries(out[key]).map(([name, sub]) => [name, forSerialization(sub)]));
  }
  if (isFreeFormObject(out)) {
    // Written whole by JSON.stringify instead of key by key against a pattern: 0.8 against
    // 2.6 µs for a five-key metadata object (measured), and a lookup writes twenty.
    const { type: _type, patternProperties: _patternProperties, ...siblings } = out;
    return siblings;
  }
  if (Array.isArray(out.anyOf)) {
    const options = out.anyOf as unknown[];
    if (options.length > 0 && options.every(isScalar)) {
      const { anyOf: _anyOf, ...siblings } = out;
      const types = [...new Set(options.map((option) => option.type))];
      // A string branch keeps its format (date-time writes a Date as ISO text).
      const format = options.find((option) => option.format !== undefined)?.format;
      return { ...siblings, ...(format !== undefined ? { format } : {}), type: types.length === 1 ? types[0] : types };
    }
    out.anyOf = options.map(forSerialization);
  }
  return out;
}

type Serializer = (data: unknown) => string;

/**
 * Serializers by response schema, for the process: the schemas are module constants, so another
 * app in the process (the test suites start hundreds) builds none again; building them all takes
 * about half a second of CPU.
 */
const serializers = new WeakMap<object, Serializer>();

/** Fastify's serializer compiler: fast-json-stringify over the schema with scalar unions as types. */
export function compileSerializer({ schema }: { schema: unknown }): Serializer {
  const cached = isSchema(schema) ? serializers.get(schema) : undefined;
  if (cached) return cached;
  const serializer = fastJson(forSerialization(schema) as Parameters<typeof fastJson>[0]);
  if (isSchema(schema)) serializers.set(schema, serializer);
  return serializer;
}
