import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { agentKey } from './fixtures.js';

const CAP = 4;
const PROTOCOL = '2025-06-18';
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describeEachDialect('MCP sessions per key', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_MCP_SESSIONS_PER_KEY: String(CAP) } });

  /** Opens a session by hand (the answer read whole); returns its id. */
  async function open(key: string): Promise<string> {
    const res = await fetch(`${server.url}/core/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, authorization: `Bearer ${key}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      }),
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    return res.headers.get('mcp-session-id')!;
  }

  /** tools/list on a session: 200 while it lives, 404 once it is gone. */
  async function call(key: string, sessionId: string): Promise<number> {
    const res = await fetch(`${server.url}/core/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, authorization: `Bearer ${key}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  it('evicts the least recently used session of a key past the cap: its next call is 404', async () => {
    const key = await agentKey(server, 'mcp-capped');
    const other = await agentKey(server, 'mcp-other');
    const bystander = await open(other);
    const sessions: string[] = [];
    for (let i = 0; i < CAP; i++) sessions.push(await open(key));
    // The first is used again, so the second is now the least recently used.
    expect(await call(key, sessions[0]!)).toBe(200);
    const newest = await open(key);
    expect(await call(key, sessions[1]!)).toBe(404);
    for (const id of [sessions[0]!, sessions[2]!, sessions[3]!, newest]) expect(await call(key, id)).toBe(200);
    // Another key's session is not one of this key's.
    expect(await call(other, bystander)).toBe(200);
  });

  it('keeps a key at the cap however many sessions it opens', async () => {
    const key = await agentKey(server, 'mcp-flood');
    const opened: string[] = [];
    for (let i = 0; i < CAP * 5; i++) opened.push(await open(key));
    const statuses = [];
    for (const id of opened) statuses.push(await call(key, id));
    expect(statuses.filter((s) => s === 200)).toHaveLength(CAP);
    // The live ones are the newest.
    expect(statuses.slice(-CAP)).toEqual(Array(CAP).fill(200));
    expect(statuses.slice(0, -CAP).every((s) => s === 404)).toBe(true);
  });
});
