import type { DeliveryRow, NewMessageRow } from './tables.js';

export type { DeliveryRow, MessageRow, NewMessageRow, SessionRow, SubscriptionRow, ThreadRow } from './tables.js';

/** A message's priority when its sender gives none (0–9, higher first). */
export const DEFAULT_PRIORITY = 4;

/**
 * A new message with every column null: the template of the cached INSERT (typed as a full
 * record, so a column added to the table cannot be left out).
 */
export const MESSAGE_TEMPLATE: Record<keyof NewMessageRow, null> = {
  id: null,
  source: null,
  destination: null,
  event_name: null,
  payload: null,
  payload_ref: null,
  thread_id: null,
  delivery_semantic: null,
  idempotency_key: null,
  state: null,
  visible_at: null,
  retry_count: null,
  deliveries: null,
  max_deliveries: null,
  delivered_at: null,
  receiver: null,
  acked_at: null,
  output: null,
  output_ref: null,
  dead_reason: null,
  dead_at: null,
  origin_kind: null,
  origin_ref: null,
  redriven_from: null,
  traceparent: null,
  priority: null,
  ordering_key: null,
  fairness_key: null,
  fair_rank: null,
  capability: null,
  created_at: null,
};

/** What a sender sets of a new message: every column without a default, and any other it chooses. */
export type MessageFields = Pick<
  NewMessageRow,
  'id' | 'source' | 'destination' | 'event_name' | 'payload' | 'delivery_semantic' | 'visible_at' | 'max_deliveries' | 'created_at'
> &
  Partial<NewMessageRow>;

/** A new message: pending and never delivered, null in every column its sender leaves out. */
export function newMessageRow(fields: MessageFields): NewMessageRow {
  return { ...MESSAGE_TEMPLATE, state: 'pending', retry_count: 0, deliveries: 0, priority: DEFAULT_PRIORITY, fair_rank: 0, ...fields };
}

export const DELIVERY_TEMPLATE: Record<keyof DeliveryRow, null> = {
  message_id: null,
  attempt: null,
  receiver: null,
  destination: null,
  delivered_at: null,
  outcome: null,
  reason: null,
  ended_at: null,
  capability: null,
};
