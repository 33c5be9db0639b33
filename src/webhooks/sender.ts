import { lookup as dnsLookup } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Webhook } from 'standardwebhooks';
import type { ReceiverGuard } from './addresses.js';

/** The most of a receiver's answer that is read and kept for the delivery log. */
export const RESPONSE_BODY_BYTES = 4096;

/** One POST to a receiver, as the delivery log records it. */
export interface AttemptResult {
  /** A 2xx answer. */
  delivered: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
}

/** What is sent: the event JSON, its id (`webhook-id`, the same on every retry) and the signing time. */
export interface OutgoingWebhook {
  url: string;
  secret: string;
  eventId: string;
  payload: string;
  /** Epoch ms; sent as Unix seconds in `webhook-timestamp`. */
  timestamp: number;
}

/** Makes one attempt of a delivery: POSTs it (WebhookSender), or mails it for a `mailto:` target (Mailer). */
export interface DeliveryTransport {
  /** The result of the attempt, or null when `stop` ended it first (shutdown: not an attempt to record). */
  send(message: OutgoingWebhook, stop: AbortSignal): Promise<AttemptResult | null>;
}

export interface SenderOptions {
  /** The whole exchange (connect, answer, the first 4 KiB of its body) must end within this. */
  timeoutMs: number;
  /** Which receivers may be reached: checked on every address a name resolves to, and on the one connected to. */
  guard: ReceiverGuard;
}

/** Thrown by the guarded lookup and the connect check; its message becomes the attempt's error. */
class ReceiverRefused extends Error {}

/**
 * DNS resolution that refuses a name when any of its addresses is refused. The connection uses
 * the very addresses checked here, so a name cannot resolve to a public address for the check
 * and an internal one for the connection (DNS rebinding).
 */
function guardedLookup(guard: ReceiverGuard): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      for (const entry of addresses) {
        const refusal = guard.refusal(hostname, entry.address);
        if (refusal !== null) return callback(new ReceiverRefused(refusal), '', 4);
      }
      if (options.all) return (callback as unknown as (e: null, all: typeof addresses) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Bytes as text for a text column: PostgreSQL refuses NUL characters. */
function storable(bytes: Buffer): string {
  return bytes.toString('utf8').replaceAll('\u0000', '\uFFFD');
}

/**
 * Sends one webhook the Standard Webhooks way: POST the event JSON with `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` (the `standardwebhooks` package signs). No
 * redirect is followed (a 3xx fails the attempt), and at most 4 KiB of the answer is read.
 */
export class WebhookSender implements DeliveryTransport {
  constructor(private readonly options: SenderOptions) {}

  /** The result of one attempt, or null when `stop` ended it first (shutdown: not an attempt to record). */
  async send(message: OutgoingWebhook, stop: AbortSignal): Promise<AttemptResult | null> {
    const started = performance.now();
    const failed = (error: string): AttemptResult => ({
      delivered: false,
      statusCode: null,
      latencyMs: Math.round(performance.now() - started),
      error,
      responseBody: null,
    });
    const url = new URL(message.url);
    const { guard } = this.options;
    const refusal = guard.literalRefusal(url);
    if (refusal !== null) return failed(refusal);
    const signature = new Webhook(message.secret).sign(message.eventId, new Date(message.timestamp), message.payload);
    const body = Buffer.from(message.payload);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.options.timeoutMs);
    const onStop = () => controller.abort();
    stop.addEventListener('abort', onStop, { once: true });
    try {
      return await new Promise<AttemptResult | null>((resolve) => {
        const request = (url.protocol === 'https:' ? https : http).request(url, {
          method: 'POST',
          // A fresh connection each time: nothing stays open between attempts or after shutdown.
          agent: false,
          lookup: guardedLookup(guard),
          signal: controller.signal,
          headers: {
            'content-type': 'application/json',
            'content-length': body.length,
            'user-agent': 'Switchboard-Webhooks/1',
            'webhook-id': message.eventId,
            'webhook-timestamp': String(Math.floor(message.timestamp / 1000)),
            'webhook-signature': signature,
          },
        });
        const end = (result: AttemptResult) => resolve(stop.aborted ? null : result);
        // The address actually connected to passes the guard too: whatever resolved the name,
        // nothing is sent to, or read from, a receiver the guard refuses.
        request.on('socket', (socket) => {
          socket.once('connect', () => {
            const connected = socket.remoteAddress;
            const refused =
              connected === undefined ? `${url.hostname}: connected to an unknown address` : guard.refusal(url.hostname, connected);
            if (refused !== null) request.destroy(new ReceiverRefused(refused));
          });
        });
        request.on('error', (err) => {
          if (controller.signal.aborted) end(failed(`no answer within ${this.options.timeoutMs} ms`));
          else end(failed(err instanceof ReceiverRefused ? err.message : `${err.message}`));
        });
        request.on('response', (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const finish = () => {
            const status = response.statusCode ?? 0;
            const location = response.headers.location;
            const redirect = status >= 300 && status < 400;
            end({
              delivered: status >= 200 && status < 300,
              statusCode: status,
              latencyMs: Math.round(performance.now() - started),
              error:
                status >= 200 && status < 300
                  ? null
                  : redirect
                    ? `redirect${location ? ` to ${location}` : ''} not followed`
                    : `HTTP ${status}`,
              responseBody: storable(Buffer.concat(chunks)),
            });
            response.destroy();
          };
          response.on('data', (chunk: Buffer) => {
            const room = RESPONSE_BODY_BYTES - size;
            chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
            size += Math.min(chunk.length, room);
            if (size >= RESPONSE_BODY_BYTES) finish();
          });
          response.on('end', finish);
          // A body cut short (timeout, reset) still leaves the status that arrived.
          response.on('error', finish);
        });
        request.end(body);
      });
    } finally {
      clearTimeout(timer);
      stop.removeEventListener('abort', onStop);
    }
  }
}
