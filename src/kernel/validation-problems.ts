import { AGENT_ID_PATTERN, AGENT_ID_RULE } from './agent-ids.js';
import type { FieldProblem } from './errors.js';

/** One finding of ajv (a request schema's, or a human_input step's schema's). */
export interface AjvIssue {
  instancePath?: string;
  schemaPath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

const allowedValues = (issue: AjvIssue): unknown[] =>
  issue.keyword === 'const' ? [issue.params?.allowedValue] : ((issue.params?.allowedValues as unknown[] | undefined) ?? []);

/**
 * A union of literals (TypeBox's `Type.Union([Type.Literal('a'), …])`) fails as one "must be
 * equal to constant" per branch and a "must match a schema in anyOf": folded here into the one
 * enum finding it means, so that the message lists the allowed values.
 */
function foldLiteralUnions(issues: AjvIssue[]): AjvIssue[] {
  const folded = new Set<AjvIssue>();
  const replaced = new Map<AjvIssue, AjvIssue>();
  for (const issue of issues) {
    if (issue.keyword !== 'anyOf' || !issue.schemaPath) continue;
    const prefix = `${issue.schemaPath}/`;
    const branches = issues.filter((other) => other.schemaPath?.startsWith(prefix));
    if (
      branches.length === 0 ||
      !branches.every((b) => (b.keyword === 'const' || b.keyword === 'enum') && b.instancePath === issue.instancePath)
    )
      continue;
    for (const branch of branches) folded.add(branch);
    replaced.set(issue, { instancePath: issue.instancePath, keyword: 'enum', params: { allowedValues: branches.flatMap(allowedValues) } });
  }
  return issues.filter((issue) => !folded.has(issue)).map((issue) => replaced.get(issue) ?? issue);
}

/**
 * ajv's findings as `{field, message}` entries a client can act on: the field is the dotted path
 * of the value at fault under `root` (a missing or unknown property names that property itself),
 * `root` alone for the value as a whole.
 */
export function ajvFieldProblems(issues: AjvIssue[], root: string): FieldProblem[] {
  return foldLiteralUnions(issues).map((issue) => {
    const segments = (issue.instancePath ?? '').split('/').filter(Boolean);
    let message = issue.message ?? 'is invalid';
    if (issue.keyword === 'required' && typeof issue.params?.missingProperty === 'string') {
      segments.push(issue.params.missingProperty);
      message = 'is required';
    } else if (issue.keyword === 'additionalProperties' && typeof issue.params?.additionalProperty === 'string') {
      segments.push(issue.params.additionalProperty);
      message = 'is not a known field';
    } else if (issue.keyword === 'enum' && Array.isArray(issue.params?.allowedValues)) {
      message = `must be one of: ${issue.params.allowedValues.join(', ')}`;
    } else if (issue.keyword === 'pattern' && issue.params?.pattern === AGENT_ID_PATTERN) {
      message = AGENT_ID_RULE;
    }
    return { field: [root, ...segments].filter(Boolean).join('.'), message };
  });
}
