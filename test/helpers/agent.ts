import type { Api } from './api.js';

/** A message as receive returns it (spec: Message). */
export interface InboxMessage {
  message_id: string;
  source: string;
  destination: string;
  event_name: string;
  payload: any;
  retry_count: number;
  thread_id?: string | null;
  timestamp: string;
}

/** Long-polls an agent's inbox once; returns what arrived (possibly nothing). */
export async function receive(agent: Api, agentId: string, timeoutSeconds = 5, max = 10): Promise<InboxMessage[]> {
  const res = await agent.get(`/api/v1/messaging/receive?agent_id=${encodeURIComponent(agentId)}&timeout=${timeoutSeconds}&max=${max}`);
  if (res.status !== 200) throw new Error(`receive failed: ${res.status} ${res.text}`);
  return res.body.data.messages as InboxMessage[];
}

/** Waits until at least one message for the agent arrives (or the time is up) and returns the first. */
export async function receiveOne(agent: Api, agentId: string, timeoutSeconds = 10): Promise<InboxMessage> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  while (Date.now() < deadline) {
    const [first] = await receive(agent, agentId, Math.max(1, Math.ceil((deadline - Date.now()) / 1000)), 1);
    if (first) return first;
  }
  throw new Error(`no message for ${agentId} within ${timeoutSeconds} s`);
}

export async function acknowledge(agent: Api, messageId: string, output?: unknown): Promise<void> {
  const res = await agent.post('/api/v1/messaging/acknowledge', output === undefined ? { message_id: messageId } : { message_id: messageId, output });
  if (res.status !== 200) throw new Error(`acknowledge failed: ${res.status} ${res.text}`);
}

export async function reject(agent: Api, messageId: string, reason: string, requeue = true): Promise<void> {
  const res = await agent.post('/api/v1/messaging/reject', { message_id: messageId, reason, requeue });
  if (res.status !== 200) throw new Error(`reject failed: ${res.status} ${res.text}`);
}
