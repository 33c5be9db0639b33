import type { Notification } from '../kernel/ports.js';
import type { MailPayload } from '../webhooks/index.js';

/** Slack's limits on a block's texts (https://api.slack.com/reference/block-kit/blocks). */
const SLACK_HEADER_CHARS = 150;
const SLACK_SECTION_CHARS = 3000;
const SLACK_FIELD_CHARS = 2000;
const SLACK_FIELDS = 10;

/** The text cut to `max` characters, an ellipsis marking the cut. */
function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Slack's mrkdwn takes &, < and > as markup: escaped, a notification's text stays text. */
function slackEscape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function htmlEscape(text: string): string {
  return slackEscape(text).replaceAll('"', '&quot;').replaceAll("'", '&#39;');
}

const SEVERITY_MARK = { info: 'ℹ️', warning: '⚠️', critical: '🔴' } as const;

/** The body POSTed to a webhook channel: the notification as `data`, in an event-like envelope. */
export function webhookBody(notification: Notification, ids: { id: string; channelId: string; createdAt: string }): string {
  return JSON.stringify({ id: ids.id, type: 'notification', channel_id: ids.channelId, created_at: ids.createdAt, data: notification });
}

/**
 * A Slack incoming-webhook message: a header, the text, the fields, a context line and, for a
 * link or a step waiting for a person, buttons that open the link or the approval link
 * (link buttons: Slack opens their URL, no interactivity endpoint is needed).
 */
export function slackBody(notification: Notification): string {
  const blocks: unknown[] = [
    {
      type: 'header',
      text: {
        type: 'plain_text',
        text: cut(`${SEVERITY_MARK[notification.severity]} ${notification.title}`, SLACK_HEADER_CHARS),
        emoji: true,
      },
    },
    { type: 'section', text: { type: 'mrkdwn', text: cut(slackEscape(notification.text), SLACK_SECTION_CHARS) } },
  ];
  const fields = (notification.fields ?? []).slice(0, SLACK_FIELDS);
  if (fields.length > 0) {
    blocks.push({
      type: 'section',
      fields: fields.map((f) => ({ type: 'mrkdwn', text: cut(`*${slackEscape(f.name)}*\n${slackEscape(f.value)}`, SLACK_FIELD_CHARS) })),
    });
  }
  const buttons: unknown[] = [];
  if (notification.human_step) {
    buttons.push({
      type: 'button',
      action_id: 'approve',
      style: 'primary',
      text: { type: 'plain_text', text: 'Approve' },
      url: notification.human_step.approve_url,
    });
  }
  if (notification.link)
    buttons.push({ type: 'button', action_id: 'open', text: { type: 'plain_text', text: 'Open' }, url: notification.link });
  if (buttons.length > 0) blocks.push({ type: 'actions', elements: buttons });
  const step = notification.human_step ? ` · run ${notification.human_step.run_id}, step ${notification.human_step.step_id}` : '';
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: slackEscape(`Switchboard · ${notification.severity}${step}`) }] });
  // `text` is what notifications and screen readers show.
  return JSON.stringify({ text: cut(`[${notification.severity}] ${notification.title}`, SLACK_SECTION_CHARS), blocks });
}

/** An email: the subject names the severity; plain text and HTML say the same. */
export function emailBody(notification: Notification): string {
  const fields = notification.fields ?? [];
  const links: { label: string; url: string }[] = [];
  if (notification.human_step) links.push({ label: 'Approve', url: notification.human_step.approve_url });
  if (notification.link) links.push({ label: 'Open', url: notification.link });
  const text = [
    notification.title,
    '',
    notification.text,
    ...(fields.length > 0 ? ['', ...fields.map((f) => `${f.name}: ${f.value}`)] : []),
    ...(links.length > 0 ? ['', ...links.map((l) => `${l.label}: ${l.url}`)] : []),
    '',
    `-- Switchboard (${notification.severity})`,
  ].join('\n');
  const html = [
    `<h2>${htmlEscape(notification.title)}</h2>`,
    `<p>${htmlEscape(notification.text).replaceAll('\n', '<br>')}</p>`,
    fields.length > 0
      ? `<ul>${fields.map((f) => `<li><strong>${htmlEscape(f.name)}</strong>: ${htmlEscape(f.value)}</li>`).join('')}</ul>`
      : '',
    links.length > 0 ? `<p>${links.map((l) => `<a href="${htmlEscape(l.url)}">${htmlEscape(l.label)}</a>`).join(' · ')}</p>` : '',
    `<p style="color:#666">Switchboard · ${htmlEscape(notification.severity)}</p>`,
  ].join('\n');
  const mail: MailPayload = { subject: `[${notification.severity}] ${notification.title}`, text, html };
  return JSON.stringify(mail);
}
