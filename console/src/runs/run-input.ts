/*
 * The input of a new run, typed as JSON: pure, unit-tested in test/console/run-input.test.ts.
 * A plan declares no input schema, so the form starts from the fields its steps read.
 */
import type { PlanStep } from '../plans/plan-layout.js';

// `input.name` in a template ({{input.name}}) or an expression (input.n > 3), not `steps.a.input.x`.
const INPUT_FIELD = /(?<![\w$.])input\.([A-Za-z_$][\w$-]*)/g;

/** The top-level input fields a plan's steps read, in the order they first appear. */
export function inputFields(steps: readonly PlanStep[]): string[] {
  const fields = new Set<string>();
  for (const match of JSON.stringify(steps).matchAll(INPUT_FIELD)) fields.add(match[1]!);
  return [...fields];
}

/** The text a new run's input starts from: each field the plan reads, as null. */
export function inputTemplate(steps: readonly PlanStep[]): string {
  const fields = inputFields(steps);
  return fields.length === 0 ? '{}' : JSON.stringify(Object.fromEntries(fields.map((field) => [field, null])), null, 2);
}

/** The typed input as a JSON object, or why it is not one. */
export function parseRunInput(text: string): { input: Record<string, unknown> } | { problem: string } {
  if (text.trim() === '') return { input: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `Not JSON: ${(error as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { problem: 'The input must be a JSON object ({ … }).' };
  return { input: value as Record<string, unknown> };
}
