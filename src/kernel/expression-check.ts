import jsonata from 'jsonata';

/**
 * The most numbers a range with constant ends (`[1..100000]`) may hold. JSONata allows ten
 * million, enough to hold a thread for seconds; a plan or trigger that needs more is better
 * served by an agent step. Ranges over data (`[1..$count(input.items)]`) are left to the
 * evaluation budget (expression-pool.ts).
 */
export const MAX_CONSTANT_RANGE = 100_000;

interface Node {
  type?: string;
  value?: unknown;
  lhs?: Node;
  rhs?: Node;
  expressions?: Node[];
}

/** The number an AST node always yields (a literal, or a block of just one), else null. */
function constant(node: Node | undefined): number | null {
  if (node === undefined) return null;
  if (node.type === 'number' && typeof node.value === 'number') return node.value;
  if (node.type === 'block' && node.expressions?.length === 1) return constant(node.expressions[0]);
  return null;
}

/** The first range with constant ends wider than `limit` anywhere in the AST: its ends, or null. */
export function wideRange(ast: unknown, limit = MAX_CONSTANT_RANGE): [number, number] | null {
  if (Array.isArray(ast)) {
    for (const element of ast) {
      const found = wideRange(element, limit);
      if (found) return found;
    }
    return null;
  }
  if (ast === null || typeof ast !== 'object') return null;
  const node = ast as Node;
  if (node.type === 'binary' && node.value === '..') {
    const from = constant(node.lhs);
    const to = constant(node.rhs);
    if (from !== null && to !== null && to - from + 1 > limit) return [from, to];
  }
  for (const child of Object.values(node)) {
    const found = wideRange(child, limit);
    if (found) return found;
  }
  return null;
}

/** Why an expression cannot be saved (it does not parse, or builds a constant range too wide), or null. */
export function expressionProblem(text: string): string | null {
  let ast: unknown;
  try {
    ast = jsonata(text).ast();
  } catch (err) {
    return `is not a valid JSONata expression: ${(err as { message?: string }).message ?? String(err)}`;
  }
  const range = wideRange(ast);
  if (range)
    return `builds the range [${range[0]}..${range[1]}]; a range with constant ends holds at most ${MAX_CONSTANT_RANGE.toLocaleString('en-US')} numbers`;
  return null;
}

/** How an expression may read its input's `root` field: the names below it, or 'all' of it. */
export type FieldsRead = ReadonlySet<string> | 'all';

/**
 * The fields below `root` (a field of the expression's input) that an expression may read, found
 * in its AST: `root.name…` at the start of a path names one. Anything that may reach `root`
 * otherwise ($, $$, %, a wildcard or descendant starting a path, $eval, `root` alone or followed
 * by something other than a name) makes it 'all'; so does an expression that does not parse.
 */
export function fieldsReadBelow(text: string, root: string): FieldsRead {
  let ast: unknown;
  try {
    ast = jsonata(text).ast();
  } catch {
    return 'all';
  }
  const names = new Set<string>();
  const visit = (node: unknown): boolean => {
    if (Array.isArray(node)) return node.every(visit);
    if (node === null || typeof node !== 'object') return true;
    const { type, value, steps } = node as { type?: string; value?: unknown; steps?: { type?: string; value?: unknown }[] };
    if (type === 'variable' && (value === '' || value === '$' || value === 'eval')) return false;
    if (type === 'parent') return false;
    if (type === 'path' && steps !== undefined) {
      const [head, next] = steps;
      if (head?.type === 'wildcard' || head?.type === 'descendant') return false;
      if (head?.type === 'name' && head.value === root) {
        if (next?.type !== 'name' || typeof next.value !== 'string') return false;
        names.add(next.value);
      }
    }
    return Object.values(node).every(visit);
  };
  return visit(ast) ? names : 'all';
}
