import { expect } from 'vitest';
import type { FakeClock } from './clock.js';
import type { TestServer } from './server.js';

const M = '/api/v1/messaging';

export interface Told {
  event_name: string;
  payload: { title?: string; human_step?: { approve_url: string }; decided_by?: string; approve_url?: string; fields?: unknown[] };
}

/** An agent channel: its notifications land in an agent's inbox, where the test reads them. */
export async function agentChannel(server: TestServer, agentId: string): Promise<string> {
  const res = await server.api.post('/api/v1/notifications/channels', { type: 'agent', name: agentId, config: { agent_id: agentId } });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id as string;
}

/** What an agent's inbox holds, oldest first. */
export async function inboxOf(server: TestServer, agentId: string): Promise<Told[]> {
  const res = await server.api.get(`${M}/inboxes/${agentId}/messages?limit=500`);
  expect(res.status, res.text).toBe(200);
  return res.body.data as Told[];
}

export const titles = async (server: TestServer, agentId: string) => (await inboxOf(server, agentId)).map((m) => m.payload.title);

/** Moves the fake clock and wakes the run timers (they sleep on real time until the due time they computed). */
export async function advance(server: TestServer, clock: FakeClock, ms: number): Promise<void> {
  clock.advance(ms);
  await server.app.platform.notifier.notify('coordination:changed');
}
