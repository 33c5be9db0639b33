import { createConfig, lintFromString } from '@redocly/openapi-core';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

interface Operation {
  operationId?: string;
  parameters?: { in: string; name: string }[];
  security?: unknown[];
  responses: Record<string, { $ref?: string }>;
}
type Doc = {
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, { content: Record<string, { schema: { $ref: string } }> }>; schemas: Record<string, any> };
};

describeEachDialect('the OpenAPI document', (dialect) => {
  const server = useServer(dialect);
  const fetchDoc = async () => {
    const res = await server.api.get('/api/v1/openapi.json', { key: null });
    expect(res.status).toBe(200);
    return res as { body: Doc; text: string };
  };
  const operations = (doc: Doc) =>
    Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ method, path, operation })));

  it("passes redocly's recommended lint without errors", async () => {
    const { text } = await fetchDoc();
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config });
    const report = (severity: string) => problems.filter((p) => p.severity === severity).map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(report('error')).toEqual([]);
    // The only warnings left: paths the spec fixes where a static segment stands where another
    // path has an id (`routines/webhook/{token}` and `routines/{id}/trigger`). The router tries
    // static segments first, and ids are prefixed (`rtn_`, `art_`), so no request is ambiguous.
    expect(report('warn').filter((p) => !p.startsWith('no-ambiguous-paths:'))).toEqual([]);
  });

  it('documents the errors each operation can answer, in the error envelope', async () => {
    const { body: doc } = await fetchDoc();
    const list = operations(doc);
    expect(list.length).toBeGreaterThan(100);
    for (const { method, path, operation } of list) {
      const at = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(operation.responses).filter((s) => s >= '400');
      const isPublic = operation.security?.length === 0;
      const hasPathParameters = (operation.parameters ?? []).some((p) => p.in === 'path');
      expect(statuses, at).toEqual(expect.arrayContaining(['429', '500']));
      expect(statuses.includes('401'), at).toBe(!isPublic);
      expect(statuses.includes('404'), at).toBe(hasPathParameters);
      if (!isPublic) expect(statuses, at).toContain('403');
      if (['post', 'put', 'patch'].includes(method)) expect(statuses, at).toEqual(expect.arrayContaining(['400', '413']));
    }
    expect(Object.keys(doc.paths['/core/api/v1/routines/webhook/{token}']!.post!.responses)).toEqual(['202', '400', '404', '409', '413', '429', '500']);
    expect(Object.keys(doc.paths['/api/v1/auth/whoami']!.get!.responses)).toEqual(['200', '401', '403', '429', '500']);
    // A signed download has no credentials to refuse, but its URL signature can be refused.
    expect(doc.paths['/api/v1/artifacts/signed/{artifact_id}/{version}']!.get!.responses['403']).toBeDefined();

    const notFound = doc.components.responses[doc.paths['/core/api/v1/tasks/{id}']!.get!.responses['404']!.$ref!.split('/').pop()!]!;
    expect(notFound.content['application/json']!.schema.$ref).toBe('#/components/schemas/Error');
    const envelope = doc.components.schemas.Error;
    expect(envelope.required).toEqual(['error', 'meta']);
    // What the server answers is what the document says.
    const res = await server.api.get('/core/api/v1/tasks/tsk_missing');
    expect(res.status).toBe(404);
    expect(Object.keys(res.body).sort()).toEqual(['error', 'meta']);
    expect(envelope.properties.error.properties.code.enum).toContain(res.body.error.code);
  });

  it("documents the trigger hooks' wildcard as the path parameter `path`, and serves the same URLs", async () => {
    const { body: doc } = await fetchDoc();
    expect(Object.keys(doc.paths).filter((path) => path.includes('*'))).toEqual([]);
    const hooks = doc.paths['/api/v1/coordination/hooks/{path}']!;
    expect(Object.keys(hooks).sort()).toEqual(['delete', 'get', 'patch', 'post', 'put']);
    for (const operation of Object.values(hooks)) expect(operation.parameters).toEqual([expect.objectContaining({ in: 'path', name: 'path', required: true })]);

    const plan = await server.api.post('/api/v1/coordination/plans', { alias: 'hook-doc', steps: [{ id: 'echo', type: 'transform', output: { ok: true } }] });
    expect(plan.status).toBe(201);
    const trigger = await server.api.post('/api/v1/coordination/triggers', { plan_id: 'hook-doc', type: 'webhook', config: { path: 'docs/deep/push' } });
    expect(trigger.status).toBe(201);
    const started = await server.api.post('/api/v1/coordination/hooks/docs/deep/push', { ok: true });
    expect(started.status).toBe(202);
    expect(started.body.data.run_id).toMatch(/^run_/);
  });
});
