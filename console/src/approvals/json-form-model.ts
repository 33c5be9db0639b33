/*
 * The logic of the JSON-Schema form (json-form.tsx), without React or rjsf: unit-tested in
 * test/console/json-form-model.test.ts.
 */

/** A JSON Schema, as the API carries it (a human_input step's `schema`). */
export type JsonSchema = Record<string, unknown>;

/**
 * Errors by field, in rjsf's `ErrorSchema` shape: each level's own messages in `__errors`, its
 * fields (object keys, array indexes) as nested trees.
 */
export interface ErrorTree {
  __errors?: string[];
  [field: string]: ErrorTree | string[] | undefined;
}

/** One bad field, as the API's 400 envelope lists it in `error.details`. */
interface FieldProblem {
  field: string;
  message: string;
  in?: string;
}

const isFieldProblem = (value: unknown): value is FieldProblem =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as FieldProblem).field === 'string' &&
  typeof (value as FieldProblem).message === 'string';

/**
 * A field path of the API (`data.items.0.name`, `steps[0].depends_on`) as its segments; each
 * segment unescaped as a JSON Pointer token (`~1` is `/`), since the server turns ajv's pointers
 * into dotted paths.
 */
export function fieldSegments(field: string): string[] {
  return field
    .split('.')
    .flatMap((part) => part.split(/\[(\d+)\]/).filter((piece) => piece !== ''))
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/**
 * The server's field problems for the value the form edits, as a tree for rjsf's `extraErrors`.
 * `root` is where that value sits in the request body (`data` for a human_input answer): problems
 * of other fields, or of the query string, are not the form's and are left out (the error notice
 * lists every problem). Undefined when none is the form's.
 */
export function errorTreeOf(details: unknown, root: string): ErrorTree | undefined {
  if (!Array.isArray(details)) return undefined;
  const rootSegments = root === '' ? [] : fieldSegments(root);
  let tree: ErrorTree | undefined;
  for (const problem of details.filter(isFieldProblem)) {
    if (problem.in !== undefined && problem.in !== 'body') continue;
    const segments = fieldSegments(problem.field);
    if (!rootSegments.every((segment, index) => segments[index] === segment)) continue;
    tree ??= {};
    let node = tree;
    for (const segment of segments.slice(rootSegments.length)) {
      // rjsf's own key: a field of that name shows its problems at its parent.
      if (segment === '__errors') break;
      const next = node[segment];
      node = typeof next === 'object' && !Array.isArray(next) ? next : (node[segment] = {});
    }
    (node.__errors ??= []).push(problem.message);
  }
  return tree;
}

/**
 * Whether a schema asks for fields a form can lay out: an object with properties. Anything else
 * (no schema, `{}`, `{type: 'object'}` alone) is any JSON object, typed as text.
 */
export function schemaHasFields(schema: JsonSchema | null | undefined): schema is JsonSchema {
  const properties = schema?.properties;
  return typeof properties === 'object' && properties !== null && Object.keys(properties).length > 0;
}

/** The JSON text fallback's value: a JSON object, or why the text is not one. */
export function parseJsonObject(text: string): { value: Record<string, unknown> } | { problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(text.trim() === '' ? '{}' : text);
  } catch (error) {
    return { problem: `Not valid JSON: ${(error as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { problem: 'Must be a JSON object ({ … })' };
  return { value: value as Record<string, unknown> };
}
