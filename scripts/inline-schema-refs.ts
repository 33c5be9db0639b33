/**
 * The served OpenAPI document names its resource schemas (components, referenced by `$ref`);
 * the tools that read a schema in place (the Python generator, the SDK comparison, the fuzzer)
 * want each one whole. This puts every `#/components/schemas/…` reference back as a copy of
 * the schema it names.
 */

const SCHEMA_REF = '#/components/schemas/';

/** `document` with every schema reference replaced by the (inlined) schema it names. */
export function inlineSchemaRefs<D extends object>(document: D): D {
  const schemas = (document as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {};
  const inline = (value: unknown, seen: readonly string[]): unknown => {
    if (Array.isArray(value)) return value.map((item) => inline(item, seen));
    if (typeof value !== 'object' || value === null) return value;
    const ref = (value as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith(SCHEMA_REF)) {
      const name = ref.slice(SCHEMA_REF.length);
      if (!(name in schemas)) throw new Error(`${ref} names no schema of the document`);
      // The server's schemas are TypeBox values without cycles; a cycle here would be a new kind of document.
      if (seen.includes(name)) throw new Error(`${ref} refers to itself through ${seen.join(' → ')}`);
      return inline(schemas[name], [...seen, name]);
    }
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, inline(item, seen)]));
  };
  return inline(document, []) as D;
}
