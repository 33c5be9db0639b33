import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { callOk, DECIDING_AGENT, modernClient, modernHttp, STATELESS_REVISION } from './fixtures.js';

/**
 * Issue 26: MCP 2026-07-28 keeps nothing between requests, so in cluster mode (two nodes on
 * one PostgreSQL database) a client may send each request to any node, the second round of a
 * human_input form included.
 */
describeEachDialect('MCP 2026-07-28 across nodes', (dialect) => {
  it.runIf(dialect === 'postgres')(
    'creates a task on one node and reads it on the other; a form asked by one node is answered to the other',
    async () => {
      const first = await startServer(dialect);
      const second = await startServer(dialect, { database: first.database, adminKey: first.adminKey });
      try {
        const keyRes = await first.api.post('/api/v1/auth/keys', { agent_id: 'mcp-cluster', role: 'agent', scopes: DECIDING_AGENT });
        expect(keyRes.status, keyRes.text).toBe(201);
        const plan = await first.api.post('/api/v1/coordination/plans', {
          alias: 'mcp-cluster',
          steps: [
            {
              id: 'ask',
              type: 'human_input',
              prompt: 'Go?',
              schema: { type: 'object', properties: { go: { type: 'boolean' } }, required: ['go'] },
            },
          ],
        });
        expect(plan.status, plan.text).toBe(201);
        const runId = (await first.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id })).body.data.id as string;

        // The client's fetch sends each request to the node the test names.
        let target: TestServer = first;
        const served = new Map<string, string[]>([
          [first.url, []],
          [second.url, []],
        ]);
        const routed = (input: string | URL, init?: RequestInit) => {
          const url = new URL(input);
          const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : {};
          served.get(target.url)!.push(body.method ?? init?.method ?? 'GET');
          return fetch(new URL(url.pathname + url.search, target.url), init);
        };
        const client = await modernClient(modernHttp(first.url, keyRes.body.data.key, { fetch: routed }), () => {
          target = second; // the retry carrying the user's reply goes to the other node
          return { action: 'accept', content: { go: true } };
        });
        try {
          expect(client.negotiatedVersion()).toBe(STATELESS_REVISION);
          target = first;
          const task = (await callOk(client, 'create_task', { title: 'made on A' })).structuredContent;
          target = second;
          expect((await callOk(client, 'get_task', { id: task.id })).structuredContent).toMatchObject({
            id: task.id,
            title: 'made on A',
            created_by: 'mcp-cluster',
          });

          target = first;
          const answered = await callOk(client, 'request_step_input', { run_id: runId });
          expect(answered.structuredContent).toMatchObject({ submitted: true, run: { status: 'completed' } });
        } finally {
          await client.close();
        }
        expect(served.get(first.url)).toEqual(expect.arrayContaining(['tools/call']));
        // get_task and the form's second round went to B.
        expect(served.get(second.url)!.filter((method) => method === 'tools/call')).toHaveLength(2);
        const run = await second.api.get(`/api/v1/coordination/runs/${runId}`);
        expect(run.body.data).toMatchObject({ status: 'completed', steps: [expect.objectContaining({ output: { go: true } })] });
      } finally {
        await second.close();
        await first.close();
      }
    },
  );
});
