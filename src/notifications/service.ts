import { Value } from '@sinclair/typebox/value';
import type { Principal } from '../auth/index.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditTrail, DeliveryTargets, Inbox, Notification, NotificationChannels, NotificationSent } from '../kernel/ports.js';
import { emailBody, slackBody, webhookBody } from './render.js';
import {
  CHANNEL_CONFIGS,
  type Channel,
  type ChannelConfig,
  type ChannelType,
  type CreateChannelBody,
  type CreatedChannel,
  type UpdateChannelBody,
} from './schemas.js';
import type { ChannelRow, NotificationsStore } from './store.js';

/** Who sends the messages of agent channels (a platform sender, like a run's steps). */
const PLATFORM_SENDER = 'switchboard';
/** The event name of an agent channel's messages. */
export const NOTIFICATION_EVENT = 'notification';

export interface NotificationsDeps {
  store: NotificationsStore;
  clock: Clock;
  audit: AuditTrail;
  /** Where webhook, slack and email channels' notifications are delivered (webhooks). */
  targets: DeliveryTargets;
  /** Where agent channels' notifications go (messaging). */
  inbox: Inbox;
  metrics: DomainMetrics;
  /** An SMTP server is configured: email channels can be made. */
  smtpConfigured: boolean;
  /** This server's address, for the test notification's link to the console. */
  publicUrl: () => string;
}

/** A channel's destination as the webhooks delivery worker sees it, and the field a refused URL is reported on. */
function targetOf(type: ChannelType, config: ChannelConfig): { url: string; field: string } | null {
  switch (type) {
    case 'webhook':
      return { url: (config as { url: string }).url, field: 'config.url' };
    case 'slack':
      return { url: (config as { webhook_url: string }).webhook_url, field: 'config.webhook_url' };
    case 'email':
      return { url: `mailto:${(config as { to: string[] }).to.map(encodeURIComponent).join(',')}`, field: 'config.to' };
    case 'agent':
      return null;
  }
}

/** What stands for the rest of a Slack incoming-webhook URL when it is shown. */
const HIDDEN = '/…';

/** A Slack incoming-webhook URL is a credential: only its origin is shown. */
function shownConfig(type: ChannelType, config: ChannelConfig): ChannelConfig {
  if (type !== 'slack') return config;
  const url = (config as { webhook_url: string }).webhook_url;
  return { webhook_url: `${new URL(url).origin}${HIDDEN}` };
}

function toChannel(row: ChannelRow): Channel {
  const type = row.type as ChannelType;
  return {
    id: row.id,
    type,
    name: row.name,
    config: shownConfig(type, JSON.parse(row.config) as ChannelConfig),
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The config as its type's schema wants it (the request schema accepts any type's). */
function checkConfig(type: ChannelType, config: ChannelConfig): string {
  const schema = CHANNEL_CONFIGS[type];
  const problem = Value.Errors(schema, config).First();
  if (problem) {
    const at = problem.path.replaceAll('/', '.');
    throw InvalidRequest.field(`config${at}`, `${problem.message} (a ${type} channel's config is ${describeConfig(type)})`);
  }
  // A config read back (GET) and sent again would otherwise replace the URL with its shown form.
  if (type === 'slack' && (config as { webhook_url: string }).webhook_url.endsWith(HIDDEN)) {
    throw InvalidRequest.field('config.webhook_url', 'give the whole incoming-webhook URL: the one shown is cut to its origin');
  }
  return JSON.stringify(config);
}

function describeConfig(type: ChannelType): string {
  return { webhook: '{"url"}', slack: '{"webhook_url"}', email: '{"to": [addresses]}', agent: '{"agent_id"}' }[type];
}

/**
 * Notification channels: where notifications (alerts, steps waiting for people) reach people
 * and triage agents. Webhook, slack and email channels each own a delivery target of the
 * webhooks domain, so their notifications are delivered, retried and logged like event
 * webhooks' deliveries; an agent channel puts each notification into the agent's inbox.
 */
export class NotificationsService implements NotificationChannels {
  constructor(private readonly deps: NotificationsDeps) {}

  /** `creator`: the actor recorded as its `created_by`. */
  async create(body: CreateChannelBody, creator: string): Promise<CreatedChannel> {
    const config = checkConfig(body.type, body.config);
    if (body.type === 'email' && !this.deps.smtpConfigured) {
      throw InvalidRequest.field('type', 'email channels need an SMTP server: set SWITCHBOARD_SMTP_URL (and SWITCHBOARD_SMTP_FROM)');
    }
    const now = this.deps.clock.now();
    const row: ChannelRow = {
      id: newId('ntc', now),
      type: body.type,
      name: body.name,
      config,
      created_by: creator,
      created_at: now,
      updated_at: now,
    };
    const target = targetOf(body.type, body.config);
    return this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'notification_channel.create', resource: { type: 'notification_channel', id: row.id } });
      await this.deps.store.insertChannel(tx, row);
      if (target === null) return toChannel(row);
      const { secret } = await this.deps.targets.put(
        tx,
        { id: row.id, url: target.url, channelType: body.type, createdBy: creator },
        target.field,
      );
      // Slack and email receivers do not verify signatures: only a webhook channel's owner needs its secret.
      return body.type === 'webhook' ? { ...toChannel(row), secret } : toChannel(row);
    });
  }

  async list(window: Page): Promise<Paged<Channel>> {
    const page = await this.deps.store.listChannels(autocommit, window);
    return mapPage(page, toChannel);
  }

  async get(id: string): Promise<Channel> {
    return toChannel(await this.find(autocommit, id));
  }

  async update(id: string, body: UpdateChannelBody): Promise<Channel> {
    return this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'notification_channel.update', resource: { type: 'notification_channel', id } });
      const row = await this.deps.store.lockChannel(tx, id);
      if (!row) throw new NotFound('Notification channel', id);
      const type = row.type as ChannelType;
      const changes: Partial<ChannelRow> = { updated_at: this.deps.clock.now() };
      if (body.name !== undefined) changes.name = body.name;
      if (body.config !== undefined) {
        changes.config = checkConfig(type, body.config);
        const target = targetOf(type, body.config);
        if (target !== null)
          await this.deps.targets.put(tx, { id, url: target.url, channelType: type, createdBy: row.created_by }, target.field);
      }
      await this.deps.store.updateChannel(tx, id, changes);
      return toChannel({ ...row, ...changes });
    });
  }

  /** Deletes a channel with its delivery log. */
  async remove(id: string): Promise<void> {
    await this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'notification_channel.delete', resource: { type: 'notification_channel', id } });
      if (!(await this.deps.store.deleteChannel(tx, id))) throw new NotFound('Notification channel', id);
      await this.deps.targets.remove(tx, id);
    });
  }

  /** Sends a test notification to the channel. */
  async test(id: string, principal: Principal): Promise<NotificationSent> {
    return this.deps.store.inTransaction(async (tx) => {
      const channel = await this.find(tx, id);
      const [sent] = await this.notify(tx, [id], {
        title: 'Test notification',
        text: `${principal.actor} sent this test to the ${channel.type} channel “${channel.name}”: it reaches its destination.`,
        severity: 'info',
        link: `${this.deps.publicUrl()}/console`,
        fields: [{ name: 'Channel', value: `${channel.name} (${channel.id})` }],
      });
      return sent!;
    });
  }

  async notify(tx: Tx, channelIds: readonly string[], notification: Notification): Promise<NotificationSent[]> {
    const ids = [...new Set(channelIds)];
    const channels = await this.deps.store.findChannels(tx, ids);
    const missing = ids.find((id) => !channels.has(id));
    if (missing !== undefined) throw new NotFound('Notification channel', missing);
    const now = this.deps.clock.now();
    const notificationId = newId('ntf', now);
    const sent: NotificationSent[] = [];
    for (const id of ids) {
      const channel = channels.get(id)!;
      const type = channel.type as ChannelType;
      if (type === 'agent') {
        const { agent_id } = JSON.parse(channel.config) as { agent_id: string };
        const { messages } = await this.deps.inbox.send({
          tx,
          messages: [
            {
              source: PLATFORM_SENDER,
              destination: agent_id,
              event_name: NOTIFICATION_EVENT,
              payload: { notification_id: notificationId, channel_id: id, ...notification },
            },
          ],
        });
        this.deps.metrics.notification(type, 'delivered');
        sent.push({ channel_id: id, notification_id: notificationId, delivery_id: null, message_id: messages[0]!.message_id });
        continue;
      }
      const payload =
        type === 'slack'
          ? slackBody(notification)
          : type === 'email'
            ? emailBody(notification)
            : webhookBody(notification, { id: notificationId, channelId: id, createdAt: iso(now) });
      const deliveryId = await this.deps.targets.enqueue(tx, id, { id: notificationId, type: NOTIFICATION_EVENT, payload });
      sent.push({ channel_id: id, notification_id: notificationId, delivery_id: deliveryId, message_id: null });
    }
    return sent;
  }

  async missing(tx: Tx, channelIds: readonly string[]): Promise<string[]> {
    const channels = await this.deps.store.findChannels(tx, [...new Set(channelIds)]);
    return channelIds.filter((id) => !channels.has(id));
  }

  private async find(tx: Tx, id: string): Promise<ChannelRow> {
    const row = await this.deps.store.findChannel(tx, id);
    if (!row) throw new NotFound('Notification channel', id);
    return row;
  }
}
