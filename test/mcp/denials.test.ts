import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { agentKey, HTTP_CLIENTS } from './fixtures.js';

const DENIAL_WINDOW_MS = 300;

/** A tool's refusal travels inside a 200: it is audited as a denial all the same, as the HTTP API's 403s are. */
describeEachDialect('MCP: refusals in the audit log', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_AUDIT_DENIAL_WINDOW_MS: String(DENIAL_WINDOW_MS) } });

  for (const [revision, connect] of HTTP_CLIENTS) {
    it(`audits a tool refused to its caller as a denial of mcp.<tool> (${revision})`, async () => {
      const agent = `mcp-denied-${dialect}-${revision.slice(0, 4)}`;
      const plan = await server.api.post('/api/v1/coordination/plans', {
        alias: `${agent}-plan`,
        steps: [{ id: 'gate', type: 'human_approval', prompt: 'Ship?' }],
      });
      expect(plan.status, plan.text).toBe(201);
      const run = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id });
      const client = await connect(server, await agentKey(server, agent));
      try {
        const refused = (await client.callTool({
          name: 'approve_step',
          arguments: { run_id: run.body.data.id, step_id: 'gate', approved: true },
        })) as { isError?: boolean; content: { text: string }[] };
        expect(refused.isError).toBe(true);
        expect(JSON.parse(refused.content[0]!.text).error.code).toBe('forbidden');
      } finally {
        await client.close();
      }
      const entry = await waitFor(
        async () => (await server.api.get(`/api/v1/audit?actor=${agent}&outcome=denied`)).body.data[0] as Record<string, any> | undefined,
        20 * DENIAL_WINDOW_MS,
      );
      expect(entry).toMatchObject({
        action: 'mcp.approve_step',
        outcome: 'denied',
        status: 403,
        actor: { kind: 'agent', id: agent },
        resource: { type: 'path', id: '/core/mcp' },
      });
      expect((await server.api.get(`/api/v1/coordination/runs/${run.body.data.id}`)).body.data.status).toBe('waiting');
    });
  }
});
