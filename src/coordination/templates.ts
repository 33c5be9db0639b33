/**
 * Step templates: `{{input.x}}`, `{{steps.a.output.b}}`, `{{event.c}}`, `{{item}}` inside any
 * JSON value of a step. A string that is exactly one template takes the referenced value with
 * its JSON type; a template inside a longer string is interpolated as text (objects as JSON).
 */

import { BoundedMap } from '../kernel/bounded-map.js';
import { isJsonObject } from '../kernel/json.js';

/** What templates may read while a run executes. */
export interface TemplateScope {
  input: unknown;
  steps: Record<string, { output: unknown }>;
  event: unknown;
  item?: unknown;
}

/** A parsed reference: its root (input, steps, event, item) and the path below it. */
export interface Reference {
  expression: string;
  root: 'input' | 'steps' | 'event' | 'item';
  path: (string | number)[];
}

const TEMPLATE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const EXACT = /^\{\{\s*([^{}]*?)\s*\}\}$/;
const SEGMENT = /^([A-Za-z_$][\w$-]*)((?:\[\d+\])*)$/;
const ROOTS = new Set(['input', 'steps', 'event', 'item']);

/** Parses `a.b[0].c` into a reference, or returns a message saying what is wrong. */
export function parseReference(expression: string): Reference | string {
  if (expression === '') return 'empty template';
  const path: (string | number)[] = [];
  for (const part of expression.split('.')) {
    const match = SEGMENT.exec(part);
    if (!match) return `'${expression}' is not a path such as input.name or steps.fetch.output.items[0]`;
    path.push(match[1]!);
    for (const index of match[2]!.matchAll(/\[(\d+)\]/g)) path.push(Number(index[1]));
  }
  const root = path.shift() as string;
  if (!ROOTS.has(root)) return `'${expression}' must start with input, steps, event or item`;
  if (root === 'steps' && (typeof path[0] !== 'string' || path[1] !== 'output')) {
    return `'${expression}' must read a step's output: steps.<step_id>.output…`;
  }
  return { expression, root: root as Reference['root'], path };
}

/** Every template reference in a JSON value (strings at any depth), parsed or with its problem. */
export function collectReferences(value: unknown, found: (Reference | string)[] = []): (Reference | string)[] {
  if (typeof value === 'string') {
    for (const match of value.matchAll(TEMPLATE)) found.push(parseReference(match[1]!));
  } else if (Array.isArray(value)) {
    for (const element of value) collectReferences(element, found);
  } else if (isJsonObject(value)) {
    for (const element of Object.values(value)) collectReferences(element, found);
  }
  return found;
}

function lookup(scope: TemplateScope, reference: Reference): unknown {
  let current: unknown = scope[reference.root];
  for (const key of reference.path) {
    if (current === null || current === undefined) return undefined;
    // Own properties only: `{{input.constructor}}` must not reach the prototype.
    if (typeof key === 'number') current = Array.isArray(current) ? current[key] : undefined;
    else current = isJsonObject(current) && Object.hasOwn(current, key) ? current[key] : undefined;
  }
  return current;
}

/** A template that cannot be resolved (plans are validated when saved, so only older rules hit this). */
export class TemplateError extends Error {}

/** Parsed references by expression: a plan's or a trigger's templates are rendered again and again. */
const parsed = new BoundedMap<string, Reference | string>(2000);

function resolveExpression(expression: string, scope: TemplateScope): unknown {
  const reference = parsed.getOrCreate(expression, () => parseReference(expression));
  if (typeof reference === 'string') throw new TemplateError(reference);
  return lookup(scope, reference);
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Resolves every template in a JSON value; a missing value is null (exact) or '' (in text). */
export function render(value: unknown, scope: TemplateScope): unknown {
  if (typeof value === 'string') {
    const exact = EXACT.exec(value);
    if (exact) return resolveExpression(exact[1]!, scope) ?? null;
    if (!value.includes('{{')) return value;
    return value.replace(TEMPLATE, (_all, expression: string) => asText(resolveExpression(expression, scope)));
  }
  if (Array.isArray(value)) return value.map((element) => render(element, scope));
  if (isJsonObject(value)) {
    // fromEntries defines own properties, so a `__proto__` key stays a plain key.
    return Object.fromEntries(Object.entries(value).map(([key, element]) => [key, render(element, scope)]));
  }
  return value;
}
