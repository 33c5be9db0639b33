import type { Generated, Selectable } from 'kysely';

export type MessageState = 'pending' | 'acked' | 'delivered' | 'dead' | 'redriven' | 'cancelled';

export interface MessagesTable {
  seq: Generated<number>;
  id: string;
  source: string;
  destination: string;
  event_name: string;
  payload: string;
  /** JSON PayloadRef when the payload was offloaded to an artifact (then `payload` is null). */
  payload_ref: string | null;
  thread_id: string | null;
  delivery_semantic: 'at_least_once' | 'at_most_once';
  idempotency_key: string | null;
  state: MessageState;
  visible_at: number;
  retry_count: number;
  deliveries: number;
  max_deliveries: number;
  delivered_at: number | null;
  receiver: string | null;
  acked_at: number | null;
  output: string | null;
  /** JSON PayloadRef when the output was offloaded to an artifact. */
  output_ref: string | null;
  dead_reason: string | null;
  dead_at: number | null;
  origin_kind: string | null;
  origin_ref: string | null;
  redriven_from: string | null;
  /** W3C trace context of the send, handed to the receiver. */
  traceparent: string | null;
  /** 0–9, higher first. */
  priority: number;
  /** Messages of one key for one inbox are delivered one at a time, in send order. */
  ordering_key: string | null;
  /** Among equal priorities, receivers take keys in turn. */
  fairness_key: string | null;
  /** The message's place among its fairness key's pending messages (1, 2, …); 0 without a key. */
  fair_rank: number;
  /** The capability the message was sent for (a capability-routed plan step), else null. */
  capability: string | null;
  created_at: number;
}

export interface MessageDeliveriesTable {
  message_id: string;
  attempt: number;
  receiver: string;
  destination: string;
  delivered_at: number;
  outcome: 'acked' | 'rejected' | 'expired' | 'dead' | null;
  reason: string | null;
  ended_at: number | null;
  /** The message's capability (see MessagesTable). */
  capability: string | null;
}

export interface SessionsTable {
  id: string;
  name: string;
  metadata: string;
  created_by: string;
  created_at: number;
}

export interface ThreadsTable {
  id: string;
  session_id: string;
  name: string;
  mode: 'wild' | 'turn';
  participants: string;
  turn: number;
  created_by: string;
  created_at: number;
}

export interface SubscriptionsTable {
  id: string;
  agent_id: string;
  topic: string;
  wildcard: number;
  created_at: number;
}

/** Each inbox's messages pending (leased ones among them) and dead, kept by triggers on messages (migration 0044). */
export interface InboxCountersTable {
  destination: string;
  pending: number;
  dead: number;
}

/** The messaging tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface MessagingTables {
  messages: MessagesTable;
  message_deliveries: MessageDeliveriesTable;
  messaging_sessions: SessionsTable;
  messaging_threads: ThreadsTable;
  messaging_subscriptions: SubscriptionsTable;
  inbox_counters: InboxCountersTable;
}

export type MessageRow = Selectable<MessagesTable>;
export type NewMessageRow = Omit<MessageRow, 'seq'>;
export type DeliveryRow = Selectable<MessageDeliveriesTable>;
export type SessionRow = Selectable<SessionsTable>;
export type ThreadRow = Selectable<ThreadsTable>;
export type SubscriptionRow = Selectable<SubscriptionsTable>;
