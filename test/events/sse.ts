import { EventSourceParserStream } from 'eventsource-parser/stream';
import { within } from '../helpers/wait.js';

export interface StreamedEvent {
  id: string;
  type: string;
  subject: string;
  actor: string;
  data: Record<string, any>;
  reason: string | null;
  created_at: string;
}

/** One open event stream: what it received so far, and waits for more. */
export interface OpenStream {
  readonly status: number;
  readonly headers: Headers;
  /** Every event received, in order, with its SSE `id` and `event` fields checked against its JSON. */
  readonly events: StreamedEvent[];
  readonly comments: string[];
  /** Resolves once `count` events have arrived in all. */
  until(count: number, ms?: number): Promise<StreamedEvent[]>;
  /** Resolves once `count` comments have arrived in all. */
  untilComments(count: number, ms?: number): Promise<string[]>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/**
 * Opens GET /api/v1/events/stream with `key`; resolves once the server's first comment (the
 * stream is open, and following the log) has arrived, or with the error status.
 */
export async function openStream(
  baseUrl: string,
  key: string,
  options: { query?: string; lastEventId?: string } = {},
): Promise<OpenStream> {
  const controller = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(`${baseUrl}/api/v1/events/stream${options.query ? `?${options.query}` : ''}`, {
    headers,
    signal: controller.signal,
  });
  const events: StreamedEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const changed = () => waiters.forEach((w) => w());
  let ended: Promise<void> = Promise.resolve();
  if (response.status === 200) {
    const messages = response
      .body!.pipeThrough(new TextDecoderStream())
      .pipeThrough(new EventSourceParserStream({ onComment: (comment) => (comments.push(comment.trim()), changed()) }));
    ended = (async () => {
      try {
        for await (const message of messages) {
          const event = JSON.parse(message.data) as StreamedEvent;
          if (message.id !== event.id || message.event !== event.type)
            throw new Error(`SSE fields disagree with the event: ${JSON.stringify(message)}`);
          events.push(event);
          changed();
        }
      } catch (err) {
        if (!controller.signal.aborted) throw err;
      }
    })();
  } else {
    await response.body?.cancel();
  }
  const wait = <T>(ready: () => T | undefined, ms: number, what: string): Promise<T> =>
    within(
      new Promise<T>((resolve) => {
        const check = () => {
          const value = ready();
          if (value !== undefined) {
            waiters.delete(check);
            resolve(value);
          }
        };
        waiters.add(check);
        check();
      }),
      ms,
      what,
    );
  const stream: OpenStream = {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    ended,
    until: (count, ms = 5000) =>
      wait(() => (events.length >= count ? events.slice() : undefined), ms, `${count} events (got ${events.length})`),
    untilComments: (count, ms = 5000) => wait(() => (comments.length >= count ? comments.slice() : undefined), ms, `${count} comments`),
    close: () => controller.abort(),
  };
  if (response.status === 200) await stream.untilComments(1);
  return stream;
}
