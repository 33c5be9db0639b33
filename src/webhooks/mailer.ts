import { performance } from 'node:perf_hooks';
import { createTransport } from 'nodemailer';
import type { AttemptResult, DeliveryTransport, OutgoingWebhook } from './sender.js';

/** The body of a delivery to a `mailto:` target: the message, rendered by its owner. */
export interface MailPayload {
  subject: string;
  text: string;
  html: string;
}

export interface MailerOptions {
  /** smtp:// or smtps://, with credentials when the server wants them. */
  smtpUrl: string;
  from: string;
  /** Connecting, the greeting and each command must each answer within this. */
  timeoutMs: number;
}

/** What the delivery log keeps of an SMTP error: the server's answer when there was one. */
function describe(err: unknown): string {
  const { response, message } = err as { response?: string; message?: string };
  return response ?? message ?? String(err);
}

/**
 * Sends the deliveries of `mailto:` targets over SMTP (nodemailer), one connection per message,
 * so nothing stays open between attempts. An SMTP answer has no HTTP status: the attempt's
 * status code stays null, and the server's last answer is kept as the response body.
 */
export class Mailer implements DeliveryTransport {
  private readonly transport;

  constructor(private readonly options: MailerOptions) {
    this.transport = createTransport({
      url: options.smtpUrl,
      connectionTimeout: options.timeoutMs,
      greetingTimeout: options.timeoutMs,
      socketTimeout: options.timeoutMs,
    });
  }

  async send(message: OutgoingWebhook, stop: AbortSignal): Promise<AttemptResult | null> {
    const started = performance.now();
    const to = decodeURIComponent(new URL(message.url).pathname).split(',');
    const mail = JSON.parse(message.payload) as MailPayload;
    try {
      const info = await this.transport.sendMail({
        from: this.options.from,
        to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        // The same on every retry, as the webhook-id header is.
        headers: { 'X-Switchboard-Notification-Id': message.eventId },
        signal: stop,
      });
      // Accepted for some recipients is delivered (a retry would mail the others twice); the refused ones are noted.
      const refused = info.rejected.length > 0 ? `; refused: ${info.rejected.map(String).join(', ')}` : '';
      return {
        delivered: true,
        statusCode: null,
        latencyMs: Math.round(performance.now() - started),
        error: null,
        responseBody: `${info.response}${refused}`,
      };
    } catch (err) {
      if (stop.aborted) return null;
      return {
        delivered: false,
        statusCode: null,
        latencyMs: Math.round(performance.now() - started),
        error: describe(err),
        responseBody: null,
      };
    }
  }
}
