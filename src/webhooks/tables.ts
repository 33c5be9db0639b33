import type { Generated } from 'kysely';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhooksTable {
  id: string;
  url: string;
  /** JSON array of event type patterns (messaging topic style). */
  types: string;
  description: string | null;
  /** `whsec_` + base64 of 32 random bytes; kept in clear: every delivery is signed with it. */
  secret: string;
  /** 0/1. */
  enabled: number;
  /** Why the webhook was disabled (null while enabled). */
  disabled_reason: string | null;
  /** The log position up to which events were matched to this webhook (fan-out). */
  cursor: number;
  /** When its deliveries started failing in a row; null after a success. */
  failing_since: number | null;
  /**
   * The actor that registered it; 'admin' for webhooks from before this was recorded. Only
   * webhooks:admin holders (never an agent) change webhooks, so it is a record, not a rule.
   */
  created_by: string;
  /**
   * null: an event webhook. Otherwise the type of the notification channel (same id) that
   * owns this delivery target: matched to no event, managed through the channel, never disabled.
   */
  channel_type: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  /** The event's log position; null for a test event (not in the log). */
  event_seq: number | null;
  /** The event id: the `webhook-id` header of every attempt. */
  event_id: string;
  event_type: string;
  /** The event JSON sent as the body, kept so retention or a test event does not matter. */
  payload: string;
  status: DeliveryStatus;
  attempts: Generated<number>;
  /** When the next attempt is due (a claim pushes it past the attempt); null once settled. */
  next_attempt_at: number | null;
  first_attempt_at: number | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  /** The last answer's body, at most 4 KiB. */
  response_body: string | null;
  created_at: number;
}

/** One attempt of a delivery, kept with it (the delivery row holds the last one's outcome too). */
export interface DeliveryAttemptsTable {
  delivery_id: string;
  /** 1 for the first attempt. */
  attempt: number;
  started_at: number;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
}

/** The webhooks tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface WebhooksTables {
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_delivery_attempts: DeliveryAttemptsTable;
}
