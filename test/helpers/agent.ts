import { createAgent, PermanentError, Switchboard } from '../../src/client/index.js';
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
  const res = await agent.post(
    '/api/v1/messaging/acknowledge',
    output === undefined ? { message_id: messageId } : { message_id: messageId, output },
  );
  if (res.status !== 200) throw new Error(`acknowledge failed: ${res.status} ${res.text}`);
}

/** The agent reports what it spent on one call of model `m` (1 token in, 1 out), of a run's step when named. */
export async function reportUsage(agent: Api, agentId: string, cost: number, step?: { run_id: string; step_id: string }): Promise<void> {
  const res = await agent.post('/api/v1/usage', {
    agent_id: agentId,
    model: 'm',
    input_tokens: 1,
    output_tokens: 1,
    cost_usd: cost,
    ...step,
  });
  if (res.status !== 201) throw new Error(`usage report failed: ${res.status} ${res.text}`);
}

export async function reject(agent: Api, messageId: string, reason: string, requeue = true): Promise<void> {
  const res = await agent.post('/api/v1/messaging/reject', { message_id: messageId, reason, requeue });
  if (res.status !== 200) throw new Error(`reject failed: ${res.status} ${res.text}`);
}

/** What an agent loop does with a message: an output to acknowledge with, or a rejection. */
export type Handling = { output: unknown } | { reject: string; requeue?: boolean };

/**
 * Runs the SDK's agent worker (receive → handle → acknowledge/reject, one message at a time)
 * until `stop()`; `handled` lists every message it saw. A real agent as far as the server can tell.
 */
export function runAgent(agent: Api, agentId: string, handle: (message: InboxMessage) => Handling | Promise<Handling>) {
  const handled: InboxMessage[] = [];
  const client = new Switchboard({ url: agent.baseUrl, apiKey: agent.key! });
  // Errors of the loop itself (a server closing under a test) are retried, as a real agent would.
  const worker = createAgent({ client, agentId, concurrency: 1, heartbeatIntervalMs: 0, pollTimeoutSeconds: 1, onError: () => undefined });
  worker.on('*', async (message) => {
    handled.push(message as InboxMessage);
    const outcome = await handle(message as InboxMessage);
    if ('output' in outcome) return outcome.output;
    throw outcome.requeue === false ? new PermanentError(outcome.reject) : new Error(outcome.reject);
  });
  const started = worker.start();
  return {
    handled,
    async stop() {
      await started;
      await worker.stop();
    },
  };
}
