import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { McpSessionTable, type McpSession } from '../../src/mcp/session-table.js';

function session(credential: string, lastSeen: number): McpSession {
  return { transport: {} as StreamableHTTPServerTransport, credential, lastSeen, release: () => {} };
}

describe('McpSessionTable', () => {
  it('names the sessions idle since a cutoff: a use keeps a session out of them', () => {
    const table = new McpSessionTable(10);
    table.add('a', session('key1', 1_000));
    table.add('b', session('key1', 2_000));
    table.add('c', session('key2', 500));
    table.touch('c', 5_000);
    expect(table.idleSince(2_500).map((s) => s.lastSeen)).toEqual([1_000, 2_000]);
    expect(table.idleSince(1_500).map((s) => s.lastSeen)).toEqual([1_000]);
    expect(table.idleSince(100)).toEqual([]);
  });

  it('evicts the least recently used session of the credential at its cap, never another credential’s', () => {
    const table = new McpSessionTable(2);
    table.add('a', session('key1', 1));
    table.add('b', session('key1', 2));
    table.add('other', session('key2', 0));
    table.touch('a', 3);
    const evicted = table.add('c', session('key1', 4));
    expect(evicted.map((s) => s.lastSeen)).toEqual([2]);
    expect(table.get('b')).toBeUndefined();
    expect([table.get('a'), table.get('c'), table.get('other')].every(Boolean)).toBe(true);
    expect(table.size).toBe(3);
  });
});
