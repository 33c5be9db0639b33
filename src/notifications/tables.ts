/** A place notifications go: a URL (webhook, slack), mailboxes (email) or an agent's inbox. */
export interface NotificationChannelsTable {
  /** `ntc_…`; also the id of the webhooks row that delivers for a webhook, slack or email channel. */
  id: string;
  type: string;
  name: string;
  /** The type's config as JSON (its secret, for a webhook channel, is kept by the delivery target). */
  config: string;
  created_by: string;
  created_at: number;
  updated_at: number;
}

/** The notifications tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface NotificationsTables {
  notification_channels: NotificationChannelsTable;
}
