import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { callFails, mcpClient } from '../mcp/fixtures.js';

/** Names the platform acts under, and prefixes kept for people and roles: no agent may take them. */
const RESERVED = [
  'admin',
  'system',
  'switchboard',
  'cli',
  'approval_link',
  'Admin',
  'SYSTEM',
  'user:ann',
  'role:operator',
  'agent:bob',
  'key:key_01',
  'trigger:trg_01',
];

describeEachDialect('agent ids that name principals', (dialect) => {
  const server = useServer(dialect);

  function expectAgentIdRefused(res: { status: number; body: any; text: string }, field: string) {
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    const problem = (res.body.error.details as { field: string; message: string }[]).find((d) => d.field === field);
    expect(problem?.message, res.text).toMatch(/reserved/);
  }

  it('refuses a reserved name or prefix at every entry point that names an agent (400)', async () => {
    for (const id of RESERVED) {
      const path = encodeURIComponent(id);
      expectAgentIdRefused(await server.api.post('/api/v1/auth/keys', { agent_id: id, role: 'agent' }), 'agent_id');
      expectAgentIdRefused(
        await server.api.post(`/api/v1/auth/agents/${path}/public-keys`, { public_key: 'A'.repeat(43) + '=' }),
        'agent_id',
      );
      expectAgentIdRefused(await server.api.post('/api/v1/discovery/capabilities', { agent_id: id, capability: 'summarize' }), 'agent_id');
      expectAgentIdRefused(await server.api.post('/api/v1/messaging/send', { destination: id, event_name: 'hello' }), 'destination');
      expectAgentIdRefused(await server.api.get(`/api/v1/messaging/receive?agent_id=${path}`), 'agent_id');
      const a2a = await server.api.post(`/a2a/${path}`, { jsonrpc: '2.0', id: 1, method: 'message/send', params: {} });
      expectAgentIdRefused(a2a, 'agentId');
    }
    // Nothing of them was written: no key names one.
    const keys = await server.api.get('/api/v1/auth/keys?limit=500');
    expect(keys.body.data.filter((k: { agent_id: string | null }) => RESERVED.includes(k.agent_id ?? ''))).toEqual([]);
  });

  it('refuses them in MCP tools too, and still takes ids that only look alike', async () => {
    const client = await mcpClient(server, server.adminKey);
    try {
      for (const id of ['admin', 'system']) {
        const error = await callFails(client, 'send_message', { destination: id, event_name: 'hello' });
        expect(error.code).toBe('invalid_request');
      }
    } finally {
      await client.close();
    }
    for (const id of ['admins', 'system-2', 'my.admin', 'users:ann', 'team:role', 'x-agent:1']) {
      const res = await server.api.post('/api/v1/auth/keys', { agent_id: id, role: 'agent' });
      expect(res.status, `${id}: ${res.text}`).toBe(201);
    }
  });
});
