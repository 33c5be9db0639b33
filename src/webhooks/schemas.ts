import { Type, type Static } from '@sinclair/typebox';
import { PageQuery, Timestamp } from '../http/schemas.js';

/**
 * The webhooks domain's schemas, written once: they validate requests, type the
 * service and the SDK, and document the OpenAPI.
 */

const Nullable = <T extends string | number>(type: 'string' | 'integer', description: string) =>
  Type.Unsafe<T | null>({ type: [type, 'null'], description });

export const MAX_URL_LENGTH = 2048;

const Url = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description: 'Where deliveries are POSTed: an http(s) URL',
});
const Types = Type.Array(
  Type.String({
    minLength: 1,
    maxLength: 200,
    description: "An event type or pattern: 'run.*' matches one more segment, 'run.>' any depth",
  }),
  { minItems: 1, maxItems: 100, uniqueItems: true, description: 'The event types this webhook receives (each an exact type or a pattern)' },
);
const Description = Type.String({ maxLength: 1000, description: 'What the webhook is for' });
export const WebhookId = Type.String({ minLength: 1, maxLength: 100, description: 'Webhook id (whk_…)' });
const DeliveryId = Type.String({ minLength: 1, maxLength: 100, description: 'Delivery id (whd_…)' });

export const CreateWebhookBody = Type.Object(
  { url: Url, types: Types, description: Type.Optional(Description) },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    types: Type.Optional(Types),
    description: Type.Optional(
      Type.Unsafe<string | null>({ ...Description, type: ['string', 'null'], description: 'New description; null clears it' }),
    ),
    enabled: Type.Optional(
      Type.Boolean({ description: 'false stops deliveries; true re-enables a disabled webhook (from the events that happen next)' }),
    ),
  },
  { additionalProperties: false, description: 'The fields to change; the others keep their value' },
);
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>;

export const Webhook = Type.Object(
  {
    id: Type.String({ description: 'Webhook id (whk_…)' }),
    url: Type.String({ description: 'Where deliveries are POSTed' }),
    types: Type.Array(Type.String(), { description: 'The event types and patterns it receives' }),
    description: Nullable<string>('string', 'What the webhook is for, or null'),
    enabled: Type.Boolean({ description: 'false: nothing is delivered (disabled by hand, or after 24 h of failed deliveries)' }),
    disabled_reason: Nullable<string>('string', 'Why it was disabled; null while enabled'),
    failing_since: Type.Unsafe<string | null>({
      type: ['string', 'null'],
      format: 'date-time',
      description: 'Since when its deliveries fail in a row; null after a success',
    }),
    created_by: Type.String({
      description: "Who registered it (an actor: 'admin', key:…, an agent id); 'admin' for webhooks from before this was recorded",
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Webhook' },
);
export type Webhook = Static<typeof Webhook>;

export const CreatedWebhook = Type.Composite(
  [
    Webhook,
    Type.Object({
      secret: Type.String({
        description: 'The signing secret (whsec_ + base64 of 32 bytes), shown only in this answer: verify deliveries with it',
      }),
    }),
  ],
  { title: 'CreatedWebhook' },
);
export type CreatedWebhook = Static<typeof CreatedWebhook>;

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
const DeliveryStatus = Type.Unsafe<(typeof DELIVERY_STATUSES)[number]>({
  type: 'string',
  enum: [...DELIVERY_STATUSES],
  description: 'pending (to be attempted, or retried), delivered (a 2xx answer) or failed (no 2xx within 24 h of the first attempt)',
});
const NullableTimestamp = (description: string) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'date-time', description });

export const Delivery = Type.Object(
  {
    id: Type.String({ description: 'Delivery id (whd_…)' }),
    webhook_id: Type.String(),
    event_id: Type.String({ description: 'The event sent: the `webhook-id` header of every attempt' }),
    event_type: Type.String(),
    status: DeliveryStatus,
    attempts: Type.Integer({ description: 'Attempts made so far' }),
    last_status_code: Nullable<number>('integer', "The last attempt's HTTP status; null when there was no answer (or it is in progress)"),
    latency_ms: Nullable<number>('integer', 'How long the last attempt took; null while it is in progress'),
    error: Nullable<string>('string', 'Why the last attempt failed; null when it delivered'),
    response_body: Nullable<string>('string', "The first 4 KiB of the last answer's body"),
    next_attempt_at: NullableTimestamp('When it is attempted next; null once delivered or failed'),
    last_attempt_at: NullableTimestamp('When it was last attempted'),
    created_at: Timestamp,
  },
  { title: 'WebhookDelivery' },
);
export type Delivery = Static<typeof Delivery>;

export const DeliveryAttempt = Type.Object(
  {
    attempt: Type.Integer({ description: '1 for the first attempt' }),
    started_at: Timestamp,
    status_code: Nullable<number>('integer', 'The HTTP status answered; null when there was no answer'),
    latency_ms: Nullable<number>('integer', 'How long the attempt took'),
    error: Nullable<string>('string', 'Why it failed; null when it delivered'),
  },
  { title: 'WebhookDeliveryAttempt' },
);
export type DeliveryAttempt = Static<typeof DeliveryAttempt>;

export const WebhookParams = Type.Object({ id: WebhookId });
export const DeliveryParams = Type.Object({ id: WebhookId, delivery_id: DeliveryId });
export const ListWebhooksQuery = PageQuery;
export const ListAttemptsQuery = PageQuery;
export const ListDeliveriesQuery = Type.Composite([PageQuery, Type.Object({ status: Type.Optional(DeliveryStatus) })]);
export type ListDeliveriesQuery = Static<typeof ListDeliveriesQuery>;
