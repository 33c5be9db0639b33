import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer, type TestServer } from '../helpers/server.js';
import { callFails, callOk, decidingAgentKey, HTTP_CLIENTS } from './fixtures.js';

/**
 * Issue 26: a human_input step answered through MCP by the client's user: an elicitation
 * request for a 2025 client, an input-required result for a 2026-07-28 client. The run's
 * progress is checked through the HTTP API.
 */
const FLAT = {
  type: 'object',
  properties: { text: { type: 'string', description: 'The notes' }, count: { type: 'integer', minimum: 1 } },
  required: ['text'],
};
/** Not a flat form (an array): asked as JSON text. */
const NESTED = { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' } } }, required: ['items'] };

async function startRun(server: TestServer, alias: string, schema: Record<string, unknown>): Promise<string> {
  const plan = await server.api.post('/api/v1/coordination/plans', {
    alias,
    steps: [{ id: 'ask', type: 'human_input', prompt: 'Notes for {{input.version}}?', schema }],
  });
  expect(plan.status, plan.text).toBe(201);
  const run = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: { version: '2.0' } });
  expect(run.status, run.text).toBe(201);
  return run.body.data.id as string;
}

async function runOf(
  server: TestServer,
  runId: string,
): Promise<{ status: string; steps: { id: string; status: string; output: unknown }[] }> {
  const res = await server.api.get(`/api/v1/coordination/runs/${runId}`);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

describeEachDialect('MCP human input', (dialect) => {
  const server = useServer(dialect);

  HTTP_CLIENTS.forEach(([revision, connect], n) => {
    it(`${revision}: the user fills the step's form in, and the run completes`, async () => {
      const runId = await startRun(server, `mcp-form-${n}`, FLAT);
      const forms: { message: string; requestedSchema: unknown }[] = [];
      const client = await connect(server, await decidingAgentKey(server, `mcp-form-${n}`), '', (form) => {
        forms.push(form);
        return { action: 'accept', content: { text: 'all good', count: 2 } };
      });
      try {
        const result = await callOk(client, 'request_step_input', { run_id: runId });
        expect(result.structuredContent).toMatchObject({ submitted: true, run: { id: runId, status: 'completed' } });
      } finally {
        await client.close();
      }
      expect(forms).toEqual([
        {
          mode: 'form',
          message: expect.stringContaining('Notes for 2.0?'),
          requestedSchema: expect.objectContaining({ type: 'object', required: ['text'] }),
        },
      ]);
      expect((forms[0]!.requestedSchema as { properties: object }).properties).toEqual(FLAT.properties);
      const run = await runOf(server, runId);
      expect(run.status).toBe('completed');
      expect(run.steps).toEqual([expect.objectContaining({ id: 'ask', status: 'completed', output: { text: 'all good', count: 2 } })]);
    });

    it(`${revision}: a schema that is no flat form is asked as JSON; a wrong answer is refused with the field errors, a decline submits nothing`, async () => {
      const runId = await startRun(server, `mcp-json-${n}`, NESTED);
      const answers = [
        { action: 'accept', content: { json: '{"items": ["x"]}' } },
        { action: 'accept', content: { json: 'not json' } },
        { action: 'decline' },
        { action: 'accept', content: { json: '{"items": [1, 2]}' } },
      ] as const;
      let asked = 0;
      let schema: unknown;
      const client = await connect(server, await decidingAgentKey(server, `mcp-json-${n}`), '', (form) => {
        schema = form.requestedSchema;
        return answers[asked++]!;
      });
      try {
        const invalid = await callFails(client, 'request_step_input', { run_id: runId, step_id: 'ask' });
        expect(invalid).toMatchObject({ code: 'invalid_request', details: expect.any(Array) });
        const garbled = await callFails(client, 'request_step_input', { run_id: runId });
        expect(garbled).toMatchObject({ code: 'invalid_request', details: [{ field: 'json' }] });
        const declined = await callOk(client, 'request_step_input', { run_id: runId });
        expect(declined.structuredContent).toEqual({ submitted: false, action: 'decline', run_id: runId, step_id: 'ask' });
        expect((await runOf(server, runId)).status).toBe('waiting');
        const answered = await callOk(client, 'request_step_input', { run_id: runId });
        expect(answered.structuredContent).toMatchObject({ submitted: true, run: { status: 'completed' } });
      } finally {
        await client.close();
      }
      expect(asked).toBe(4);
      expect(schema).toEqual({ type: 'object', properties: { json: expect.objectContaining({ type: 'string' }) }, required: ['json'] });
      expect((await runOf(server, runId)).steps[0]).toMatchObject({ status: 'completed', output: { items: [1, 2] } });
    });

    it(`${revision}: a client that cannot ask its user, or nothing waiting, is a tool error`, async () => {
      const runId = await startRun(server, `mcp-mute-${n}`, FLAT);
      const client = await connect(server, await decidingAgentKey(server, `mcp-mute-${n}`));
      try {
        const mute = await callFails(client, 'request_step_input', { run_id: runId });
        expect(mute).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('submit_step_input') });
        expect(await callFails(client, 'request_step_input', { run_id: 'run_nope' })).toMatchObject({ code: 'not_found' });
        // Arguments are checked as every tool's are, worded as the HTTP API words them.
        expect(await callFails(client, 'request_step_input', { run_id: 42 })).toMatchObject({
          code: 'invalid_request',
          details: [{ field: 'run_id', in: 'arguments', message: expect.any(String) }],
        });
      } finally {
        await client.close();
      }
      expect((await runOf(server, runId)).status).toBe('waiting');
    });
  });
});
