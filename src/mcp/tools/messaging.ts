import { actingAgent } from '../../auth/index.js';
import { callerOf, DEFAULT_VISIBILITY_S, MAX_BATCH, MAX_WAIT_S } from '../../messaging/index.js';
import { AcknowledgeBody, Acknowledged, Received, ReceiveQuery, SendBody, Sent } from '../../messaging/schemas.js';
import { CREATE, define, DISPATCH, toolInput, UPDATE, type GroupTool, type ToolServices } from './define.js';

/** Messaging: send to an agent's inbox, receive from one's own, acknowledge. The source is always the caller. */
export function messagingTools({ inbox }: ToolServices): GroupTool[] {
  return [
    define({
      name: 'send_message',
      permission: 'messaging:write',
      title: 'Send a message',
      description:
        "Send a message to an agent's inbox, as the caller (the source). It waits there until the agent receives and acknowledges it; at_least_once messages are redelivered until then.",
      input: toolInput(SendBody),
      output: Sent,
      annotations: DISPATCH,
      run: async (args, principal) => (await inbox.send({ from: callerOf(principal), messages: [args] })).messages[0]!,
    }),
    define({
      name: 'receive_messages',
      permission: 'messaging:read',
      title: 'Receive messages',
      description: `Receive messages from the caller's inbox (an admin names agent_id); each is leased for visibility_timeout seconds and comes back unless acknowledged. timeout waits up to ${MAX_WAIT_S} s for one to arrive.`,
      input: toolInput(ReceiveQuery),
      output: Received,
      // Not read-only: it leases what it returns, so a second call gets other messages.
      annotations: CREATE,
      run: async (query, principal, signal) => ({
        messages: await inbox.receive(
          callerOf(principal),
          actingAgent(principal, query.agent_id),
          {
            waitSeconds: Math.min(query.timeout ?? 0, MAX_WAIT_S),
            max: Math.min(query.max ?? 10, MAX_BATCH),
            visibilitySeconds: query.visibility_timeout ?? DEFAULT_VISIBILITY_S,
          },
          signal,
        ),
      }),
    }),
    define({
      name: 'acknowledge_message',
      permission: 'messaging:write',
      title: 'Acknowledge a message',
      description:
        'Acknowledge a received message: the work is done and it is not redelivered. output (any JSON) is kept for the producer, e.g. a routine execution or a plan step; usage (model, tokens, cost) is recorded with it.',
      input: toolInput(AcknowledgeBody.anyOf[0]),
      output: Acknowledged,
      annotations: UPDATE,
      run: ({ message_id, output, usage }, principal) =>
        inbox.acknowledge(callerOf(principal), [message_id], output, usage && new Map([[message_id, usage]])),
    }),
  ];
}
