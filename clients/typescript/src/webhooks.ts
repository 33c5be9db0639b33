import { Webhook } from 'standardwebhooks';
import type { Event } from './types.js';

export { WebhookVerificationError } from 'standardwebhooks';

/** Request headers as Node (`IncomingHttpHeaders`), the Fetch API (`Headers`) or a plain object give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const SIGNED_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/**
 * Checks a Switchboard webhook delivery (Standard Webhooks: the `webhook-signature` HMAC over
 * id, timestamp and the raw body, keyed with the webhook's `whsec_…` secret; a timestamp
 * within 5 minutes) and returns its event. Pass the body exactly as received, before any JSON
 * parsing. Throws `WebhookVerificationError` when the delivery is not authentic.
 */
export function verifyWebhook(secret: string, headers: WebhookHeaders, body: string | Uint8Array): Event {
  const header = headers instanceof Headers ? (name: string) => headers.get(name) : plainHeaders(headers);
  const signed: Record<string, string> = {};
  for (const name of SIGNED_HEADERS) {
    const value = header(name);
    if (value !== null && value !== undefined) signed[name] = value;
  }
  return new Webhook(secret).verify(typeof body === 'string' ? body : Buffer.from(body), signed) as Event;
}

/** Looks headers of a plain object up by lower-case name (the first of repeated ones). */
function plainHeaders(headers: Record<string, string | string[] | undefined>): (name: string) => string | undefined {
  const byName = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value[0] : value]));
  return (name) => byName.get(name);
}
