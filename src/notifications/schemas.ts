import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { AgentId, PageQuery, Timestamp } from '../http/schemas.js';

/**
 * The notifications domain's schemas, written once: they validate requests, type the service
 * and the SDK, and document the OpenAPI.
 */

export const CHANNEL_TYPES = ['webhook', 'slack', 'email', 'agent'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

const MAX_URL_LENGTH = 2048;
/** Recipients of one email channel at most: a channel is a team's list, not a mailing list. */
export const MAX_EMAIL_RECIPIENTS = 20;

export const WebhookChannelConfig = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: MAX_URL_LENGTH,
      description: 'Where notifications are POSTed, signed (Standard Webhooks): an http(s) URL',
    }),
  },
  { additionalProperties: false, description: 'webhook: a URL' },
);
export const SlackChannelConfig = Type.Object(
  {
    webhook_url: Type.String({
      minLength: 1,
      maxLength: MAX_URL_LENGTH,
      description:
        'A Slack incoming-webhook URL (https://hooks.slack.com/services/…); shown only as its origin after it is set: it is a credential',
    }),
  },
  { additionalProperties: false, description: 'slack: an incoming webhook' },
);
export const EmailChannelConfig = Type.Object(
  {
    to: Type.Array(
      Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@,;<>"]+@[^\\s@,;<>"]+$', description: 'An email address' }),
      { minItems: 1, maxItems: MAX_EMAIL_RECIPIENTS, uniqueItems: true, description: 'Who receives the notifications' },
    ),
  },
  { additionalProperties: false, description: 'email: recipients, sent over SWITCHBOARD_SMTP_URL' },
);
export const AgentChannelConfig = Type.Object(
  { agent_id: AgentId },
  { additionalProperties: false, description: 'agent: the agent whose inbox gets each notification as a `notification` message' },
);

/** Each type's config, checked against the type a channel has. */
export const CHANNEL_CONFIGS: Record<ChannelType, TSchema> = {
  webhook: WebhookChannelConfig,
  slack: SlackChannelConfig,
  email: EmailChannelConfig,
  agent: AgentChannelConfig,
};

const ChannelConfig = Type.Union([WebhookChannelConfig, SlackChannelConfig, EmailChannelConfig, AgentChannelConfig], {
  description: "The type's settings: webhook {url}, slack {webhook_url}, email {to}, agent {agent_id}",
});
export type ChannelConfig = Static<typeof ChannelConfig>;

const ChannelTypeSchema = Type.Union(
  CHANNEL_TYPES.map((type) => Type.Literal(type)),
  { description: 'webhook (a signed POST), slack (an incoming-webhook message with blocks), email (SMTP), agent (a message in its inbox)' },
);
const Name = Type.String({ minLength: 1, maxLength: 200, description: 'What the channel is, for people choosing it' });
export const ChannelId = Type.String({ minLength: 1, maxLength: 100, description: 'Channel id (ntc_…)' });

export const CreateChannelBody = Type.Object(
  { type: ChannelTypeSchema, name: Name, config: ChannelConfig },
  { additionalProperties: false },
);
export type CreateChannelBody = Static<typeof CreateChannelBody>;

export const UpdateChannelBody = Type.Object(
  { name: Type.Optional(Name), config: Type.Optional(ChannelConfig) },
  { additionalProperties: false, description: 'The fields to change (config whole, of the same type); the others keep their value' },
);
export type UpdateChannelBody = Static<typeof UpdateChannelBody>;

export const Channel = Type.Object(
  {
    id: Type.String({ description: 'Channel id (ntc_…)' }),
    type: ChannelTypeSchema,
    name: Type.String(),
    config: ChannelConfig,
    created_by: Type.String({ description: 'Who made it (an actor)' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'NotificationChannel' },
);
export type Channel = Static<typeof Channel>;

export const CreatedChannel = Type.Composite(
  [
    Channel,
    Type.Object({
      secret: Type.Optional(
        Type.String({
          description: 'webhook: the signing secret (whsec_ + base64 of 32 bytes), shown only in this answer: verify deliveries with it',
        }),
      ),
    }),
  ],
  { title: 'CreatedNotificationChannel' },
);
export type CreatedChannel = Static<typeof CreatedChannel>;

const NullableId = (description: string) => Type.Unsafe<string | null>({ type: ['string', 'null'], description });

export const NotificationSent = Type.Object(
  {
    channel_id: Type.String(),
    notification_id: Type.String({ description: 'The notification (ntf_…): the `webhook-id` of its deliveries' }),
    delivery_id: NullableId('webhook, slack, email: its delivery, listed at GET /api/v1/webhooks/{channel_id}/deliveries'),
    message_id: NullableId("agent: the message in the agent's inbox"),
  },
  { title: 'NotificationSent' },
);
export type NotificationSent = Static<typeof NotificationSent>;

export const ChannelParams = Type.Object({ id: ChannelId });
export const ListChannelsQuery = PageQuery;
