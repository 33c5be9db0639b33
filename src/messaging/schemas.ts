import { Type } from '@sinclair/typebox';
import {
  AgentId,
  CursorPageQuery,
  JsonObject,
  NullableTimestamp,
  PageQuery,
  PayloadRefInput,
  PayloadRefSchema,
  Timestamp,
} from '../http/schemas.js';
import { UsageReport } from '../usage/index.js';

const EventName = Type.String({ minLength: 1, maxLength: 255, description: 'Name of the message event, e.g. task.review' });
const DeliverySemantic = Type.Union([Type.Literal('at_least_once'), Type.Literal('at_most_once')], {
  description: 'at_least_once (default): redelivered until acknowledged; at_most_once: settled on delivery, never redelivered',
});
const Topic = Type.String({ minLength: 1, maxLength: 255, description: "Dot-separated topic, e.g. 'orders.created'" });

const FlowKey = (description: string) => Type.String({ minLength: 1, maxLength: 255, description });

/** How a message takes its turn in its inbox: sends, batches, publishes and channel frames take them alike. */
const FlowFields = {
  priority: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 9, description: 'Higher is received first; FIFO within a priority. Default 4' }),
  ),
  ordering_key: Type.Optional(
    FlowKey(
      'Messages of one key for one destination are delivered one at a time, in send order: the next becomes receivable when the one before is acknowledged, dead-lettered or its lease runs out (then it is delivered again)',
    ),
  ),
  fairness_key: Type.Optional(
    FlowKey("Among messages of equal priority, receivers get keys in turn, so one key's backlog cannot starve the others"),
  ),
};

const SendFields = {
  ...FlowFields,
  destination: Type.Intersect([AgentId], { description: 'Receiving agent' }),
  event_name: EventName,
  payload: Type.Optional(
    Type.Unknown({
      description:
        'Any JSON value; default {}. Over SWITCHBOARD_INLINE_PAYLOAD_BYTES it is stored as an artifact and delivered as payload_ref',
    }),
  ),
  payload_ref: Type.Optional(PayloadRefInput),
  delivery_semantic: Type.Optional(DeliverySemantic),
  delay_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 7 * 86_400, description: 'Invisible to receivers for this long' })),
  max_deliveries: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Deliveries before dead-lettering; default 5' })),
};

export const SendBody = Type.Object(
  {
    ...SendFields,
    thread_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'Thread the message belongs to (participants only)' }),
    ),
    idempotency_key: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'A repeat from the same source within 24 h returns the original message' }),
    ),
  },
  { additionalProperties: false },
);

export const SendBatchBody = Type.Object(
  { messages: Type.Array(Type.Object(SendFields, { additionalProperties: false }), { minItems: 1, maxItems: 500 }) },
  { additionalProperties: false },
);

export const Sent = Type.Object(
  {
    message_id: Type.String(),
    status: Type.Literal('sent'),
    timestamp: Timestamp,
  },
  { title: 'Sent' },
);

export const Message = Type.Object(
  {
    message_id: Type.String(),
    source: Type.String(),
    destination: Type.String(),
    event_name: Type.String(),
    payload: Type.Unknown({ description: 'Null when the payload travels by reference (payload_ref)' }),
    payload_ref: Type.Optional(PayloadRefSchema('payload')),
    thread_id: Type.Union([Type.String(), Type.Null()]),
    timestamp: Timestamp,
    retry_count: Type.Integer({ description: 'Number of prior deliveries' }),
    delivery_semantic: DeliverySemantic,
    status: Type.String({ description: 'sent, delivered (leased), acked, dead, redriven or cancelled' }),
    redriven_from: Type.Union([Type.String(), Type.Null()], { description: 'The dead letter this message was redriven from' }),
    priority: Type.Integer({ description: '0–9, higher first' }),
    ordering_key: Type.Union([Type.String(), Type.Null()]),
    fairness_key: Type.Union([Type.String(), Type.Null()]),
    traceparent: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description: 'W3C trace context of the send: a receiver continues the trace from it (the platform parents an ack or reject to it)',
      }),
    ),
  },
  { title: 'Message' },
);

export const ReceiveQuery = Type.Object({
  agent_id: Type.Optional(Type.Intersect([AgentId], { description: 'Whose inbox; default: the calling agent' })),
  timeout: Type.Optional(Type.Number({ minimum: 0, default: 0, description: 'Seconds to wait for a message (long poll); capped at 30' })),
  max: Type.Optional(Type.Integer({ minimum: 1, default: 10, description: 'Most messages to return; capped at 100' })),
  visibility_timeout: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 43_200, default: 30, description: 'Seconds the messages stay leased to this receiver' }),
  ),
});

/** What a receive answers: the messages now leased to the caller. */
export const SentBatch = Type.Object({ messages: Type.Array(Sent) }, { title: 'SentBatch' });

export const Received = Type.Object({ messages: Type.Array(Message) }, { title: 'Received' });

export const AcknowledgeBody = Type.Union([
  Type.Object(
    {
      message_id: Type.String({ minLength: 1, maxLength: 100 }),
      output: Type.Optional(Type.Unknown({ description: 'Result of the work, kept for the producer (routine execution, plan step)' })),
      usage: Type.Optional(UsageReport),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    { message_ids: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 500 }) },
    { additionalProperties: false },
  ),
]);

export const Acknowledged = Type.Object({ acknowledged: Type.Array(Type.String()) }, { title: 'Acknowledged' });

export const RejectBody = Type.Object(
  {
    message_id: Type.String({ minLength: 1, maxLength: 100 }),
    reason: Type.String({ minLength: 1, maxLength: 4000 }),
    requeue: Type.Optional(Type.Boolean({ default: true, description: 'false dead-letters the message at once' })),
    delay_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400, description: 'Override the exponential backoff' })),
  },
  { additionalProperties: false },
);

export const Rejected = Type.Object(
  {
    message_id: Type.String(),
    status: Type.Union([Type.Literal('requeued'), Type.Literal('dead_lettered')]),
    retry_at: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'Rejected' },
);

export const ExtendBody = Type.Object(
  {
    message_id: Type.String({ minLength: 1, maxLength: 100 }),
    visibility_timeout: Type.Integer({ minimum: 1, maximum: 43_200, description: 'Seconds from now' }),
  },
  { additionalProperties: false },
);

export const LeaseExtended = Type.Object({ message_id: Type.String(), visible_at: Type.String() }, { title: 'LeaseExtended' });

export const Attempt = Type.Object(
  {
    attempt: Type.Integer(),
    receiver: Type.String(),
    delivered_at: Timestamp,
    outcome: Type.Union([Type.String(), Type.Null()]),
    reason: Type.Union([Type.String(), Type.Null()]),
    ended_at: NullableTimestamp,
  },
  { title: 'MessageAttempt' },
);

export const DeadLetter = Type.Composite(
  [
    Message,
    Type.Object({
      reason: Type.Union([Type.String(), Type.Null()]),
      dead_at: NullableTimestamp,
      attempts: Type.Array(Attempt),
      origin: Type.Union(
        [
          Type.Object({
            kind: Type.String({ description: 'plan_step, routine_execution or a2a_task' }),
            ref: Type.String({
              description: 'plan_step: `run_id|step_id|attempt`; routine_execution: the execution id; a2a_task: the task id',
            }),
          }),
          Type.Null(),
        ],
        {
          description:
            'The work the message was sent for, whose state follows it: a plan step is redriven with its run (POST /coordination/runs/{run_id}/redrive), not by redriving the message',
        },
      ),
    }),
  ],
  { title: 'DeadLetter' },
);

export const AgentQuery = Type.Composite([PageQuery, Type.Object({ agent_id: Type.Optional(AgentId) })]);
export const DeadLettersQuery = Type.Composite([CursorPageQuery, Type.Object({ agent_id: Type.Optional(AgentId) })]);

export const Inbox = Type.Object(
  {
    agent_id: Type.String(),
    pending: Type.Integer({ description: 'Messages waiting to be received, delayed or backing off ones included' }),
    leased: Type.Integer({ description: 'Messages received and not settled, their lease still running' }),
    dead_letters: Type.Integer(),
    oldest_pending_at: Type.Union([Timestamp, Type.Null()], { description: 'When the oldest pending message was sent' }),
    oldest_pending_age_seconds: Type.Union([Type.Integer(), Type.Null()], { description: 'How long it has waited, by the server clock' }),
  },
  { title: 'Inbox' },
);

export const InboxState = Type.Union([Type.Literal('pending'), Type.Literal('leased')], {
  description: 'pending: waiting to be received (default); leased: received, not yet settled',
});
export const InboxMessagesQuery = Type.Composite([CursorPageQuery, Type.Object({ state: Type.Optional(InboxState) })]);

export const InboxMessage = Type.Composite(
  [
    Message,
    Type.Object({
      visible_at: Timestamp,
      deliveries: Type.Integer({ description: 'Deliveries so far (attempts)' }),
      max_deliveries: Type.Integer(),
      lease_expires_at: Type.Union([Timestamp, Type.Null()], { description: 'Leased messages: when the lease runs out' }),
      leased_to: Type.Union([Type.String(), Type.Null()], { description: 'Leased messages: the receiver' }),
      blocked_by: Type.Union([Type.Literal('ordering_key'), Type.Null()], {
        description: 'ordering_key: a message of its ordering key sent before it, or leased now, is not settled yet',
      }),
    }),
  ],
  { title: 'InboxMessage' },
);

export const SessionBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), metadata: Type.Optional(JsonObject) },
  { additionalProperties: false },
);

export const Session = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    metadata: JsonObject,
    created_by: Type.String(),
    created_at: Timestamp,
  },
  { title: 'MessagingSession' },
);

export const ThreadBody = Type.Object(
  {
    session_id: Type.String({ minLength: 1, maxLength: 100 }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    mode: Type.Optional(
      Type.Union([Type.Literal('wild'), Type.Literal('turn')], {
        description: 'wild: any participant any time (default); turn: participants speak in list order, round robin',
      }),
    ),
    participants: Type.Array(AgentId, { minItems: 1, maxItems: 100 }),
  },
  { additionalProperties: false },
);

export const Thread = Type.Object(
  {
    id: Type.String(),
    session_id: Type.String(),
    name: Type.String(),
    mode: Type.Union([Type.Literal('wild'), Type.Literal('turn')]),
    participants: Type.Array(Type.String()),
    next_speaker: Type.Union([Type.String(), Type.Null()], { description: 'In turn mode, who may send next' }),
    created_by: Type.String(),
    created_at: Timestamp,
  },
  { title: 'Thread' },
);

export const SubscribeBody = Type.Object(
  {
    agent_id: AgentId,
    topic: Type.Intersect([Topic], { description: "Exact topic, or a pattern: '*' matches one token, a final '>' one or more" }),
  },
  { additionalProperties: false },
);

export const Subscription = Type.Object(
  { id: Type.String(), agent_id: Type.String(), topic: Type.String(), created_at: Timestamp },
  { title: 'Subscription' },
);

export const PublishBody = Type.Object(
  {
    topic: Topic,
    payload: Type.Optional(
      Type.Unknown({
        description: 'Any JSON value; default {}. Over SWITCHBOARD_INLINE_PAYLOAD_BYTES each subscriber gets it as payload_ref',
      }),
    ),
    ...FlowFields,
  },
  { additionalProperties: false },
);

export const Published = Type.Object(
  {
    topic: Type.String(),
    count: Type.Integer({ description: 'Subscribers the message was delivered to' }),
    message_ids: Type.Array(Type.String()),
  },
  { title: 'Published' },
);

export const RateLimitQuery = Type.Object({ agent_id: Type.Optional(AgentId) });
export const RateLimitStatus = Type.Object(
  { limit: Type.Integer(), remaining: Type.Integer(), reset_at: Timestamp },
  { title: 'RateLimitStatus' },
);
const Id = Type.String({ minLength: 1, maxLength: 100 });
export const MessageParams = Type.Object({ message_id: Id });
export const InboxParams = Type.Object({ agent_id: AgentId });
export const SessionParams = Type.Object({ session_id: Id });
export const ThreadParams = Type.Object({ thread_id: Id });
export const SubscriptionParams = Type.Object({ subscription_id: Id });
