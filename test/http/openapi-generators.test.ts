import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

/*
 * The served document as a code generator sees it: openapi-typescript turns it into types, and a
 * small program that holds the server's own answers (a run, a 409) in those types must
 * type-check. Nothing leaves the machine: the generator gets the document as an object.
 */

/** Type-checks the files (name → source) together, strict, and returns each error as text. */
function typeErrors(files: Record<string, string>): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-generated-'));
  try {
    for (const [name, source] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), source);
    const program = ts.createProgram({
      rootNames: Object.keys(files).map((name) => path.join(dir, name)),
      options: {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        lib: ['lib.es2022.d.ts'],
        types: [],
      },
    });
    return ts
      .getPreEmitDiagnostics(program)
      .map((d) => `${d.file ? path.basename(d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describeEachDialect('types generated from the OpenAPI document', (dialect) => {
  const server = useServer(dialect);

  it("openapi-typescript makes types that hold the server's answers: components['schemas']['Run'] and a 409's envelope", async () => {
    const doc = (await server.api.get('/api/v1/openapi.json', { key: null })).body as OpenAPI3;
    const schema = astToString(await openapiTS(doc));

    const plan = { alias: `generated-${dialect}`, steps: [{ id: 'gate', type: 'human_approval', prompt: 'Go?' }] };
    expect((await server.api.post('/api/v1/coordination/plans', plan)).status).toBe(201);
    const run = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.alias, input: { n: 1 }, tags: ['generated'] });
    expect(run.status).toBe(201);
    const taken = await server.api.post('/api/v1/coordination/plans', plan);
    expect(taken.status).toBe(409);

    const use = (run: unknown) => `
import type { components, operations } from './schema';

type Run = components['schemas']['Run'];
type PlanConflict = operations['coordination_createPlan']['responses'][409]['content']['application/json'];
type DependencyConflict = operations['tasks_addDependency']['responses'][409]['content']['application/json'];

export const run: Run = ${JSON.stringify(run)};
export const conflict: PlanConflict = ${JSON.stringify(taken.body)};
export const sameEnvelope: DependencyConflict = conflict;
export const firstStep: components['schemas']['RunStep'] | undefined = run.steps[0];
export const code: PlanConflict['error']['code'] = 'conflict';
// @ts-expect-error a run's status is one of five, which 'paused' is not
export const paused: Run['status'] = 'paused';
// @ts-expect-error getRun documents no 409
export type NoConflict = operations['coordination_getRun']['responses'][409];
`;
    expect(typeErrors({ 'schema.ts': schema, 'use.ts': use(run.body.data) })).toEqual([]);

    // The check can fail: an answer the types do not describe is refused.
    const errors = typeErrors({ 'schema.ts': schema, 'use.ts': use({ ...run.body.data, color: 'blue' }) });
    expect(errors).toEqual([
      expect.stringMatching(/^use\.ts: Object literal may only specify known properties, and '"color"' does not exist in type/),
    ]);
  }, 60_000);
});
