import { expect } from 'vitest';
import type { Api } from '../helpers/api.js';

let counter = 0;

/** A capability namespace no other test in the file uses (tests share one server). */
export function namespace(label = 'ns'): string {
  counter += 1;
  return `${label}${counter}x${Math.floor(Math.random() * 1e6)}`;
}

export interface Registered {
  id: string;
  agent_id: string;
  capability: string;
  metadata: Record<string, unknown>;
  groups: string[];
}

/** Registers a capability (as admin, or as the agent when `api` is the agent's client). */
export async function register(
  api: Api,
  agentId: string,
  capability: string,
  metadata: Record<string, unknown> = {},
  groups: string[] = [],
): Promise<Registered> {
  const res = await api.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability, metadata, groups });
  expect(res.status, res.text).toBeOneOf([200, 201]);
  return res.body.data as Registered;
}

export async function heartbeat(api: Api, agentId: string, load?: number): Promise<any> {
  const res = await api.post('/api/v1/discovery/heartbeat', load === undefined ? { agent_id: agentId } : { agent_id: agentId, load });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

/** The agent ids of a lookup, in order, with the full response for further checks. */
export async function lookup(api: Api, query: Record<string, string | number | boolean>): Promise<{ ids: string[]; body: any }> {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const res = await api.get(`/api/v1/discovery/agents?${qs}`);
  expect(res.status, res.text).toBe(200);
  return { ids: res.body.data.agents.map((a: { agent_id: string }) => a.agent_id), body: res.body };
}

export async function search(api: Api, body: Record<string, unknown>): Promise<any> {
  const res = await api.post('/api/v1/discovery/search', body);
  expect(res.status, res.text).toBe(200);
  return res.body;
}
