import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { agentKey, callFails, callOk, HTTP_CLIENTS, mcpClient, SPEC_TOOLS, statelessRequest } from './fixtures.js';

const GROUPS: Record<string, string[]> = {
  routines: ['create_routine', 'delete_routine', 'get_routine', 'list_routines', 'trigger_routine', 'update_routine'],
  tasks: ['add_comment', 'create_task', 'delete_task', 'get_task', 'list_projects', 'list_tasks', 'update_task'],
  messaging: ['acknowledge_message', 'receive_messages', 'send_message'],
  discovery: ['find_agents', 'search_capabilities'],
  coordination: ['approve_step', 'get_run', 'list_pending_approvals', 'list_plans', 'request_step_input', 'start_run', 'submit_step_input'],
  artifacts: ['create_snippet', 'read_artifact'],
};
const ALL_TOOLS = Object.values(GROUPS).flat().sort();

describeEachDialect('MCP tools', (dialect) => {
  const server = useServer(dialect);

  it('lists every tool with a title, the four annotations, a closed input schema and an output schema', async () => {
    const client = await mcpClient(server, await agentKey(server, 'tools-lister'));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(ALL_TOOLS);
      expect(ALL_TOOLS).toEqual(expect.arrayContaining(SPEC_TOOLS));
      for (const tool of tools) {
        expect(tool.title, tool.name).toBeTruthy();
        expect(tool.description, tool.name).toBeTruthy();
        expect(Object.keys(tool.annotations ?? {}).sort(), tool.name).toEqual([
          'destructiveHint',
          'idempotentHint',
          'openWorldHint',
          'readOnlyHint',
        ]);
        expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
        expect(tool.outputSchema?.type, tool.name).toBe('object');
        expect(Object.keys(tool.outputSchema?.properties ?? {}).length, tool.name).toBeGreaterThan(0);
      }
      const readOnly = tools.filter((tool) => tool.annotations?.readOnlyHint).map((tool) => tool.name);
      expect(readOnly.sort()).toEqual([
        'find_agents',
        'get_routine',
        'get_run',
        'get_task',
        'list_pending_approvals',
        'list_plans',
        'list_projects',
        'list_routines',
        'list_tasks',
        'read_artifact',
        'search_capabilities',
      ]);
      expect(client.getInstructions()).toContain('Switchboard');
    } finally {
      await client.close();
    }
  });

  it('narrows the tools to the groups of ?tools= on both revisions, and refuses an unknown group (400 invalid_request)', async () => {
    const key = await agentKey(server, 'tools-narrow');
    for (const [revision, connect] of HTTP_CLIENTS) {
      for (const [query, groups] of [
        ['?tools=routines', ['routines']],
        ['?tools=messaging,coordination', ['messaging', 'coordination']],
      ] as const) {
        const client = await connect(server, key, query);
        try {
          const names = (await client.listTools()).map((tool) => tool.name).sort();
          expect(names, `${revision} ${query}`).toEqual(groups.flatMap((group) => GROUPS[group]!).sort());
          // A tool outside the groups is no tool of this client: a protocol error, not a tool error.
          await expect(client.callTool({ name: 'create_task', arguments: { title: 'not offered' } })).rejects.toThrow(
            "Unknown tool 'create_task'",
          );
        } finally {
          await client.close();
        }
      }
    }
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    };
    const refusals = [
      await fetch(`${server.url}/core/mcp?tools=routines,bogus`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` },
        body: JSON.stringify(initialize),
      }),
      await statelessRequest(server, key, 'tools/list', {}, '?tools=routines,bogus'),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('invalid_request');
      expect(body.error.message).toContain("unknown tool group 'bogus'");
    }
  });

  it('sends, receives and acknowledges a message, as the caller only', async () => {
    const sender = await mcpClient(server, await agentKey(server, 'tools-sender'));
    const receiver = await mcpClient(server, await agentKey(server, 'tools-receiver'));
    try {
      const sent = (await callOk(sender, 'send_message', { destination: 'tools-receiver', event_name: 'work.do', payload: { n: 1 } }))
        .structuredContent;
      expect(sent).toMatchObject({ message_id: expect.any(String), status: 'sent' });
      const received = (await callOk(receiver, 'receive_messages', { max: 10 })).structuredContent;
      expect(received.messages).toEqual([
        expect.objectContaining({
          message_id: sent.message_id,
          source: 'tools-sender',
          destination: 'tools-receiver',
          event_name: 'work.do',
          payload: { n: 1 },
        }),
      ]);
      expect((await callOk(receiver, 'acknowledge_message', { message_id: sent.message_id, output: 'done' })).structuredContent).toEqual({
        acknowledged: [sent.message_id],
      });
      expect((await callOk(receiver, 'receive_messages', {})).structuredContent).toEqual({ messages: [] });

      // An agent acts only as itself: the sender cannot read the receiver's inbox.
      const forbidden = await callFails(sender, 'receive_messages', { agent_id: 'tools-receiver' });
      expect(forbidden).toMatchObject({ code: 'forbidden', message: expect.stringContaining("'tools-receiver'") });
    } finally {
      await sender.close();
      await receiver.close();
    }
  });

  it('gives bad arguments back as invalid_request with the field, worded as the HTTP API words them', async () => {
    const client = await mcpClient(server, await agentKey(server, 'tools-bad'));
    try {
      const http = await server.api.get('/core/api/v1/tasks?limit=1000');
      expect(http.status).toBe(400);
      const error = await callFails(client, 'list_tasks', { limit: 1000 });
      expect(error).toEqual({
        code: 'invalid_request',
        message: 'Invalid request: limit must be <= 500',
        details: [{ field: 'limit', in: 'arguments', message: 'must be <= 500' }],
      });
      expect(error.message).toBe(http.body.error.message);
      expect(await callFails(client, 'send_message', { destination: 'x', event_name: 'e', colour: 'red' })).toMatchObject({
        code: 'invalid_request',
        details: [{ field: 'colour', message: 'is not a known field' }],
      });
      expect(await callFails(client, 'find_agents', { strategy: 'fastest' })).toMatchObject({
        code: 'invalid_request',
        details: [{ field: 'strategy', message: expect.stringMatching(/^must be one of: .*least_loaded/) }],
      });
      expect(await callFails(client, 'start_run', {})).toMatchObject({
        code: 'invalid_request',
        details: [{ field: 'plan_id', message: 'is required' }],
      });
      expect(await callFails(client, 'get_run', { run_id: 'run_nope' })).toMatchObject({ code: 'not_found' });
    } finally {
      await client.close();
    }
  });

  it('finds an agent by capability and searches capabilities by description', async () => {
    const worker = await server.agent('tools-translator');
    const registered = await worker.post('/api/v1/discovery/capabilities', {
      capability: 'text.translate-mcp',
      metadata: { description: 'Translate documents between human languages' },
      groups: ['tools-linguists'],
    });
    expect(registered.status, registered.text).toBe(201);
    expect((await worker.post('/api/v1/discovery/heartbeat', { load: 0.2 })).status).toBe(200);
    const client = await mcpClient(server, await agentKey(server, 'tools-finder'));
    try {
      const found = (await callOk(client, 'find_agents', { capability: 'text.*', group: 'tools-linguists', strategy: 'least_loaded' }))
        .structuredContent;
      expect(found).toMatchObject({
        strategy: 'least_loaded',
        total: 1,
        agents: [expect.objectContaining({ agent_id: 'tools-translator', capability: 'text.translate-mcp', health: 'healthy' })],
      });
      const searched = (await callOk(client, 'search_capabilities', { query: 'translate a document into another language' }))
        .structuredContent;
      expect(searched.ranker).toMatch(/^lexical/);
      expect(searched.results).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ capability: expect.objectContaining({ name: 'text.translate-mcp', agent_id: 'tools-translator' }) }),
        ]),
      );
    } finally {
      await client.close();
    }
  });

  it('lists plans, starts a run, gets it, and approves its waiting step', async () => {
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `tools-gated-${dialect}`,
      // The agent decides because the step names it (agent keys hold no approvals:decide).
      steps: [{ id: 'gate', type: 'human_approval', prompt: 'Ship {{input.version}}?', approvers: ['agent:tools-runner'] }],
    });
    expect(plan.status, plan.text).toBe(201);
    const client = await mcpClient(server, await agentKey(server, 'tools-runner'));
    try {
      const plans = (await callOk(client, 'list_plans', { limit: 500 })).structuredContent;
      expect(plans.items).toEqual(
        expect.arrayContaining([expect.objectContaining({ id: plan.body.data.id, alias: `tools-gated-${dialect}` })]),
      );
      const run = (await callOk(client, 'start_run', { plan_id: `tools-gated-${dialect}`, input: { version: '2.0' } })).structuredContent;
      expect(run).toMatchObject({ plan_id: plan.body.data.id, created_by: 'tools-runner', input: { version: '2.0' } });
      expect((await callOk(client, 'get_run', { run_id: run.id })).structuredContent).toMatchObject({
        id: run.id,
        status: 'waiting',
        steps: [expect.objectContaining({ id: 'gate', status: 'waiting' })],
      });
      const pending = (await callOk(client, 'list_pending_approvals', { limit: 500 })).structuredContent.items as { run_id: string }[];
      expect(pending.filter((p) => p.run_id === run.id)).toEqual([expect.objectContaining({ step_id: 'gate', prompt: 'Ship 2.0?' })]);
      expect((await callOk(client, 'approve_step', { run_id: run.id, step_id: 'gate', approved: true })).structuredContent).toMatchObject({
        id: run.id,
        status: 'completed',
      });
      expect((await callOk(client, 'get_run', { run_id: run.id })).structuredContent).toMatchObject({ status: 'completed' });
    } finally {
      await client.close();
    }
  });

  it('changes only the routines and tasks its agent created, as over HTTP (auth/ownership.ts)', async () => {
    const owner = await mcpClient(server, await agentKey(server, 'tools-owner'));
    const other = await mcpClient(server, await agentKey(server, 'tools-meddler'));
    try {
      const routine = (await callOk(owner, 'create_routine', { name: 'owned', trigger_type: 'webhook', target_agent: 'tools-owner' }))
        .structuredContent;
      const task = (await callOk(owner, 'create_task', { title: 'owned' })).structuredContent;
      for (const [tool, args] of [
        ['update_routine', { id: routine.id, enabled: false }],
        ['delete_routine', { id: routine.id }],
        ['update_task', { id: task.id, title: 'taken' }],
        ['delete_task', { id: task.id }],
      ] as const) {
        expect(await callFails(other, tool, args), tool).toMatchObject({
          code: 'forbidden',
          message: expect.stringContaining("was created by 'tools-owner'"),
        });
      }
      expect((await callOk(owner, 'update_routine', { id: routine.id, enabled: false })).structuredContent).toMatchObject({
        enabled: false,
      });
      await callOk(owner, 'delete_routine', { id: routine.id });
      await callOk(owner, 'delete_task', { id: task.id });
    } finally {
      await owner.close();
      await other.close();
    }
  });

  it('stores a snippet and reads it back as text and as a resource', async () => {
    const client = await mcpClient(server, await agentKey(server, 'tools-writer'));
    try {
      const artifact = (await callOk(client, 'create_snippet', { name: 'notes.json', content: { text: 'hello' } })).structuredContent;
      expect(artifact).toMatchObject({ name: 'notes.json', content_type: 'application/json', owner: 'tools-writer' });
      const read = await callOk(client, 'read_artifact', { artifact_id: artifact.id });
      const uri = `switchboard://artifacts/${artifact.id}`;
      expect(read.structuredContent).toMatchObject({ id: artifact.id, text: '{"text":"hello"}', resource_uri: uri });
      expect(read.content[1]).toEqual({
        type: 'resource_link',
        uri,
        name: 'notes.json',
        mimeType: 'application/json',
        size: artifact.size_bytes,
      });
      const resource = await client.readResource({ uri });
      expect(resource.contents).toEqual([{ uri, mimeType: 'application/json', text: '{"text":"hello"}' }]);

      // Another agent may not read it, until it is shared.
      const other = await mcpClient(server, await agentKey(server, 'tools-stranger'));
      try {
        expect(await callFails(other, 'read_artifact', { artifact_id: artifact.id })).toMatchObject({ code: 'forbidden' });
      } finally {
        await other.close();
      }
    } finally {
      await client.close();
    }
  });
});
