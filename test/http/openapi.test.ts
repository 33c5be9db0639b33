import { lintFromString, loadConfig } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { describeOperations } from '../../src/http/openapi.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

interface Operation {
  operationId?: string;
  'x-permission'?: string;
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, { schema: any }> };
  security?: unknown[];
  responses: Record<string, { $ref?: string; description?: string; content?: Record<string, { schema: any }> }>;
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

  it("passes redocly's lint (recommended, as redocly.yaml sets it) without a problem", async () => {
    const { text } = await fetchDoc();
    const config = await loadConfig({ configPath: 'redocly.yaml' });
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
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
    expect(Object.keys(doc.paths['/core/api/v1/routines/webhook/{token}']!.post!.responses)).toEqual([
      '202',
      '400',
      '404',
      '409',
      '413',
      '429',
      '500',
    ]);
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

  it("documents each operation's 403 with the permission it needs", async () => {
    const { body: doc } = await fetchDoc();
    const missing: string[] = [];
    for (const { method, path, operation } of operations(doc)) {
      const permission = operation['x-permission'];
      if (permission === undefined || permission === 'authenticated') continue;
      if (!operation.responses['403']?.description?.includes(`\`${permission}\``)) missing.push(`${method} ${path}`);
    }
    expect(missing).toEqual([]);
    expect(doc.paths['/api/v1/coordination/runs']!.post!.responses['403']!.description).toMatch(
      /^`forbidden`: The caller lacks the permission `runs:write`/,
    );
    expect(doc.paths['/api/v1/auth/whoami']!.get!.responses['403']!.description).toMatch(/Any credentials may call this operation/);
    expect(doc.paths['/api/v1/artifacts/signed/{artifact_id}/{version}']!.get!.responses['403']!.description).toMatch(/URL signature/);
    // A public route whose token can be refused says so (its route declares when).
    expect(doc.paths['/api/v1/coordination/approvals/{token}']!.post!.responses['403']!.description).toMatch(
      /^`forbidden`: The link decides as no one/,
    );
    expect(doc.paths['/api/v1/coordination/approvals/{token}']!.get!.responses['403']).toBeUndefined();
  });

  it('documents the 409 of every operation the server answers one from: a taken alias, a dependency cycle, a used approval link', async () => {
    const { body: doc } = await fetchDoc();
    const answers: { operation: Operation; status: number; body: any }[] = [];

    const plan = { alias: 'openapi-conflict', steps: [{ id: 'gate', type: 'human_approval', prompt: 'Go?' }] };
    expect((await server.api.post('/api/v1/coordination/plans', plan)).status).toBe(201);
    const taken = await server.api.post('/api/v1/coordination/plans', plan);
    answers.push({ operation: doc.paths['/api/v1/coordination/plans']!.post!, ...taken });

    const first = (await server.api.post('/core/api/v1/tasks', { title: 'first' })).body.data.id;
    const second = (await server.api.post('/core/api/v1/tasks', { title: 'second', depends_on: [first] })).body.data.id;
    const cycle = await server.api.post(`/core/api/v1/tasks/${first}/dependencies`, { depends_on: second });
    answers.push({ operation: doc.paths['/core/api/v1/tasks/{id}/dependencies']!.post!, ...cycle });

    const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.alias })).body.data.id;
    const person = `openapi-approver-${dialect}`;
    expect((await server.api.post('/api/v1/auth/users', { username: person, role: 'approver' })).status).toBe(201);
    const link = await server.api.post(`/api/v1/coordination/runs/${run}/steps/gate/links`, { approver: `user:${person}` });
    expect(link.status, link.text).toBe(201);
    const token = String(link.body.data.approve_url).split('/').pop();
    expect((await server.api.withKey(null).post(`/api/v1/coordination/approvals/${token}`, { approved: true })).status).toBe(200);
    const used = await server.api.withKey(null).post(`/api/v1/coordination/approvals/${token}`, { approved: true });
    answers.push({ operation: doc.paths['/api/v1/coordination/approvals/{token}']!.post!, ...used });

    for (const { operation, status, body } of answers) {
      expect(status, operation.operationId).toBe(409);
      expect(body.error.code).toBe('conflict');
      const documented = operation.responses['409'];
      expect(documented?.description, operation.operationId).toMatch(/^`conflict`: /);
      expect(documented?.content?.['application/json']?.schema).toEqual({ $ref: '#/components/schemas/Error' });
    }
    expect(cycle.body.error.details.cycle).toEqual([first, second, first]);
    // Operations whose services never conflict document no 409.
    expect(doc.paths['/api/v1/coordination/runs/{run_id}']!.get!.responses['409']).toBeUndefined();
  });

  it("names every resource: each operation's result is a component schema, referenced by $ref", async () => {
    const { body: doc } = await fetchDoc();
    const schemas = doc.components.schemas;
    for (const name of [
      'Run',
      'Plan',
      'PlanStep',
      'Message',
      'Task',
      'Agent',
      'Artifact',
      'Routine',
      'Trigger',
      'Webhook',
      'Event',
      'AuditEntry',
      'User',
      'Deleted',
    ]) {
      expect(schemas[name]?.title, name).toBe(name);
    }
    const inline: string[] = [];
    for (const { method, path, operation } of operations(doc)) {
      const success = Object.entries(operation.responses).find(([status]) => status.startsWith('2'))?.[1];
      const data = success?.content?.['application/json']?.schema.properties?.data;
      if (data === undefined) continue; // bytes, or no content
      const item = data.type === 'array' ? data.items : data;
      // A list of plain values (a routine's next fire times) has nothing to name.
      if (item.$ref === undefined && !['string', 'integer', 'number', 'boolean'].includes(item.type)) inline.push(`${method} ${path}`);
    }
    expect(inline).toEqual([]);
    const run = doc.paths['/api/v1/coordination/runs/{run_id}']!.get!.responses['200']!.content!['application/json']!.schema;
    expect(run.properties.data).toEqual({ $ref: '#/components/schemas/Run' });
    expect(schemas.Run.properties.steps.items).toEqual({ $ref: '#/components/schemas/RunStep' });
    // A schema used in requests too is one component: a plan's steps, written and read.
    const body = doc.paths['/api/v1/coordination/plans']!.post!.requestBody!;
    expect(body.content['application/json']!.schema.properties.steps.items).toEqual({ $ref: '#/components/schemas/PlanStep' });
    expect(schemas.Plan.properties.steps.items).toEqual({ $ref: '#/components/schemas/PlanStep' });
    // Every reference resolves.
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.filter((name) => !(name in schemas))).toEqual([]);
  });

  it("documents the trigger hooks' wildcard as the path parameter `path`, and serves the same URLs", async () => {
    const { body: doc } = await fetchDoc();
    expect(Object.keys(doc.paths).filter((path) => path.includes('*'))).toEqual([]);
    const hooks = doc.paths['/api/v1/coordination/hooks/{path}']!;
    expect(Object.keys(hooks).sort()).toEqual(['delete', 'get', 'patch', 'post', 'put']);
    for (const operation of Object.values(hooks))
      expect(operation.parameters).toEqual([expect.objectContaining({ in: 'path', name: 'path', required: true })]);

    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: 'hook-doc',
      steps: [{ id: 'echo', type: 'transform', output: { ok: true } }],
    });
    expect(plan.status).toBe(201);
    const trigger = await server.api.post('/api/v1/coordination/triggers', {
      plan_id: 'hook-doc',
      type: 'webhook',
      config: { path: 'docs/deep/push' },
    });
    expect(trigger.status).toBe(201);
    const started = await server.api.post('/api/v1/coordination/hooks/docs/deep/push', { ok: true });
    expect(started.status).toBe(202);
    expect(started.body.data.run_id).toMatch(/^run_/);
  });
});

describe('naming the schemas of the document', () => {
  const answering = (schema: unknown) => ({
    paths: { '/x': { get: { responses: { '200': { description: 'ok', content: { 'application/json': { schema } } } } } } },
  });
  const titled = (title: string, type: string) => ({ title, type: 'object', properties: { id: { type } } });

  it('turns a titled schema into a component and each use into a $ref', () => {
    const doc = describeOperations(answering({ type: 'array', items: titled('Thing', 'string') }), []) as any;
    expect(doc.components.schemas.Thing).toEqual(titled('Thing', 'string'));
    expect(doc.paths['/x'].get.responses['200'].content['application/json'].schema.items).toEqual({ $ref: '#/components/schemas/Thing' });
  });

  it('refuses two different schemas with one title', () => {
    const schema = { type: 'object', properties: { a: titled('Thing', 'string'), b: titled('Thing', 'integer') } };
    expect(() => describeOperations(answering(schema), [])).toThrow("Two different schemas are titled 'Thing'");
  });
});
