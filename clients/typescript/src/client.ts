import { EventSourceParserStream } from 'eventsource-parser/stream';
import { DEFAULT_INLINE_PAYLOAD_BYTES, offloading, sha256Hex } from './payload-refs.js';
import { OPERATIONS, PAGED, PUBLIC, type Domain, type OperationSpec, BYTE_ANSWERS } from './operations.js';
import { Channel, type ChannelOptions, type ChannelSocket } from './channel.js';
import { SwitchboardError } from './errors.js';
import { EMPTY_SHA256, encodeBody } from './request-body.js';
import type { Body, DomainClient, Event, Page, Query, RawBody, Result } from './types.js';

export { SwitchboardError };

/*
 * This module runs in Node and in browsers (the console imports it): it uses only web
 * platform APIs. Ed25519 signing needs Node's crypto and lives in signing.ts, which the Node
 * entry (index.ts) plugs in as a RequestSigner.
 */

/** Reported before each retry (for logs and metrics). */
export interface RetryEvent {
  method: string;
  path: string;
  /** 0 for the first retry. */
  attempt: number;
  /** How long the client waits before retrying: `Retry-After` when the server sent one, else backoff. */
  delayMs: number;
  /** The status that caused the retry, or undefined after a network error. */
  status?: number;
  retryAfter?: string | null;
  error?: unknown;
}

/**
 * Signs requests as an agent (Ed25519, over the method, the path, the time and the body's
 * hash): the Node entry makes one from a private key (signing.ts); anything that can sign, a
 * key store for instance, may implement it.
 */
export interface RequestSigner {
  readonly agentId: string;
  /** The hex SHA-256 of a body, which the signature covers; a Blob is read as a stream, not held in memory. */
  sha256Hex(body: string | Blob): Promise<string>;
  /** The X-Agent-ID, X-Timestamp and X-Signature headers of one request. */
  headers(method: string, pathWithQuery: string, bodySha256: string): Record<string, string>;
}

export interface ConnectionOptions {
  url: string;
  /** Attempts after the first on 429 (any method) and on 5xx/network errors (idempotent methods, and a POST whose body carries an `idempotency_key`). Default 3. */
  retries?: number;
  /** Upper bound of one backoff wait, in ms (not of a server's Retry-After). Default 5000. */
  maxBackoffMs?: number;
  onRetry?: (event: RetryEvent) => void;
  /**
   * `messaging.send` and `sendBatch` upload a payload whose JSON text is larger than this
   * (bytes) as an artifact and send `payload_ref` instead, so the server never takes it in a
   * JSON body. Default 256 KiB, the server's default `SWITCHBOARD_INLINE_PAYLOAD_BYTES`;
   * `Infinity` sends every payload inline.
   */
  inlinePayloadBytes?: number;
}

/**
 * A browser's console session: the HttpOnly cookie, which the browser sends and no script
 * reads, and the session's CSRF token, sent as X-CSRF-Token with each request (the server
 * requires it on those that change state). No token yet: only signing in, or reading the
 * current session (GET /auth/sessions/current answers with its token).
 */
export interface CookieSession {
  csrfToken?: string;
}

/**
 * A client's credentials: an API key, a signer (in Node, `{ agentId, privateKey }` through
 * index.ts), or a browser's session cookie; or none, for the public operations alone (an
 * approval link's page, an upload URL).
 */
export type ClientOptions = (
  { apiKey: string } | { signer: RequestSigner } | { session: CookieSession } | { apiKey?: never; signer?: never; session?: never }
) &
  ConnectionOptions;

type AnyInput = {
  path?: Record<string, string | number>;
  query?: Record<string, unknown>;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
};

interface Envelope {
  data?: unknown;
  error?: { code: string; message: string; details?: unknown };
  meta?: { request_id?: string; total?: number; limit?: number; offset?: number; total_estimated?: boolean; next_cursor?: string };
}

/** Extra artifact methods that stream. */
export interface ArtifactStreams {
  /**
   * Uploads bytes of a known size without holding them in memory, for either kind of credentials:
   * an upload URL is created, the bytes are PUT to it as they are read, and the upload is confirmed.
   */
  uploadStream(
    input: Omit<Body<'artifacts.createUploadUrl'>, 'expires_in'> & { expires_in?: number; body: RawBody; signal?: AbortSignal },
  ): Promise<Result<'artifacts.confirmUpload'>>;
  /** The bytes of a version (default: the current one) as a stream. */
  downloadStream(input: { artifact_id: string; version?: number; signal?: AbortSignal }): Promise<ReadableStream<Uint8Array>>;
}

/**
 * What `client.events.stream` follows: type patterns, a subject, and where to start (exclusive);
 * `onOpen` is called each time the server has answered an opening or reopening of the stream,
 * from when on no event is missed (a reader that loaded state before may reload it then);
 * `onDrop` each time an open stream, or an attempt to open it, failed and will be retried (the
 * connection was lost, or the server answered 5xx or 429): the reader is not live until the next `onOpen`.
 */
export type StreamEventsInput = Query<'events.openStream'> & {
  signal?: AbortSignal;
  onOpen?: () => void;
  onDrop?: (error: unknown) => void;
};

/** The extra events method that follows the live stream. */
export interface EventStreams {
  /**
   * Every event after `after` (or from now on), then each new one as it is appended, until
   * `signal` aborts or the loop breaks. A dropped connection is reopened after a backoff with
   * `Last-Event-ID`, so nothing is missed or repeated; errors the server answers (401, 400…) end it.
   */
  stream(input?: StreamEventsInput): AsyncIterable<Event>;
}

// GET, PUT and DELETE repeat safely; POST and PATCH may not (a 5xx may come after the work was done).
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
const PAGE_SIZE = 100;

/** The items of a page: the data, or the list under the key the operation names (`data.agents`). */
function itemsOf(spec: OperationSpec, data: unknown): unknown[] {
  return (spec.length === 4 ? (data as Record<string, unknown>)[spec[3]] : data) as unknown[];
}

/** A JSON body with an `idempotency_key` (POST /messaging/send). */
function hasIdempotencyKey(body: unknown): boolean {
  return typeof body === 'object' && body !== null && typeof (body as { idempotency_key?: unknown }).idempotency_key === 'string';
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

/** `Retry-After` in ms: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The Switchboard API client: one typed method per operation, grouped by domain
 * (`client.messaging.send({ body })`), authenticated with an API key or Ed25519 signatures.
 * Methods resolve to the envelope's `data`; downloads resolve to the `Response`, to stream.
 */
export class Switchboard {
  readonly auth: DomainClient<'auth'>;
  readonly messaging: DomainClient<'messaging'>;
  readonly discovery: DomainClient<'discovery'>;
  readonly routines: DomainClient<'routines'>;
  readonly projects: DomainClient<'projects'>;
  readonly tasks: DomainClient<'tasks'>;
  readonly coordination: DomainClient<'coordination'>;
  readonly artifacts: DomainClient<'artifacts'> & ArtifactStreams;
  readonly events: DomainClient<'events'> & EventStreams;
  readonly webhooks: DomainClient<'webhooks'>;
  readonly notifications: DomainClient<'notifications'>;
  readonly alerts: DomainClient<'alerts'>;
  readonly cluster: DomainClient<'cluster'>;
  readonly audit: DomainClient<'audit'>;
  readonly usage: DomainClient<'usage'>;
  readonly budgets: DomainClient<'budgets'>;
  /** The agent this client signs as, when it signs. */
  readonly agentId: string | undefined;
  /** The server's base URL. */
  readonly url: string;
  readonly #apiKey: string | undefined;
  readonly #session: CookieSession | undefined;
  readonly #signer: RequestSigner | undefined;
  readonly #retries: number;
  readonly #maxBackoffMs: number;
  readonly #onRetry: ((event: RetryEvent) => void) | undefined;
  /** One channel per agent id ('' for the caller), while it is open. */
  readonly #channels = new Map<string, Promise<Channel>>();

  constructor(options: ClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.#retries = options.retries ?? 3;
    this.#maxBackoffMs = options.maxBackoffMs ?? 5_000;
    this.#onRetry = options.onRetry;
    if ('signer' in options && options.signer) {
      this.agentId = options.signer.agentId;
      this.#signer = options.signer;
    } else if ('apiKey' in options) {
      this.#apiKey = options.apiKey;
    } else if ('session' in options) {
      this.#session = options.session;
    }
    this.auth = this.#domain('auth');
    this.discovery = this.#domain('discovery');
    this.routines = this.#domain('routines');
    this.projects = this.#domain('projects');
    this.tasks = this.#domain('tasks');
    this.coordination = this.#domain('coordination');
    const artifacts = this.#domain('artifacts');
    const streams: ArtifactStreams = {
      uploadStream: async ({ body, signal, ...intent }) => {
        const upload = await artifacts.createUploadUrl({ body: intent, ...(signal ? { signal } : {}) });
        const url = new URL(upload.url);
        await artifacts.putUpload({
          path: { upload_id: upload.upload_id },
          query: { expires: Number(url.searchParams.get('expires')), signature: url.searchParams.get('signature') ?? '' },
          body,
          ...(signal ? { signal } : {}),
        });
        return artifacts.confirmUpload({ path: { upload_id: upload.upload_id }, ...(signal ? { signal } : {}) });
      },
      downloadStream: async ({ artifact_id, version, signal }) => {
        const response = await artifacts.download({
          path: { artifact_id },
          query: version === undefined ? {} : { version },
          ...(signal ? { signal } : {}),
        });
        return response.body ?? new Blob([]).stream();
      },
    };
    this.artifacts = Object.assign(artifacts, streams);
    const inlineLimit = options.inlinePayloadBytes ?? DEFAULT_INLINE_PAYLOAD_BYTES;
    this.messaging = offloading(this.#domain('messaging'), this.artifacts, inlineLimit, (bytes) => this.sha256Hex(bytes));
    const events = this.#domain('events');
    this.events = Object.assign(events, { stream: (input: StreamEventsInput = {}) => this.#follow(events, input) });
    this.webhooks = this.#domain('webhooks');
    this.notifications = this.#domain('notifications');
    this.alerts = this.#domain('alerts');
    this.cluster = this.#domain('cluster');
    this.audit = this.#domain('audit');
    this.usage = this.#domain('usage');
    this.budgets = this.#domain('budgets');
  }

  async *#follow(events: DomainClient<'events'>, { signal, onOpen, onDrop, ...query }: StreamEventsInput): AsyncIterable<Event> {
    let after = query.after;
    for (let drops = 0; ; drops++) {
      try {
        const response = await events.openStream({
          query: { ...query, after },
          ...(after === undefined ? {} : { headers: { 'last-event-id': after } }),
          ...(signal ? { signal } : {}),
        });
        onOpen?.();
        const messages = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
        for await (const message of messages) {
          drops = 0;
          const event = JSON.parse(message.data) as Event;
          after = event.id;
          yield event;
        }
        if (!signal?.aborted) onDrop?.(new Error('The event stream ended'));
      } catch (error) {
        // An answer the server gave (bad query, credentials) will not change by asking again.
        if (signal?.aborted || (error instanceof SwitchboardError && error.status < 500 && error.status !== 429)) throw error;
        onDrop?.(error);
      }
      if (signal?.aborted) return;
      await sleep(this.#backoff(drops), signal);
    }
  }

  #domain<D extends Domain>(domain: D): DomainClient<D> {
    const methods: Record<string, unknown> = {};
    for (const [name, spec] of Object.entries(OPERATIONS[domain] as Record<string, OperationSpec>)) {
      const bytes = BYTE_ANSWERS.has(`${domain}.${name}`);
      const call = async (input: AnyInput = {}) => (await this.#call(spec, input, bytes)).data;
      if (spec[2] === PAGED) {
        Object.assign(call, { all: (input?: AnyInput) => this.#pages(spec, input), page: (input?: AnyInput) => this.#page(spec, input) });
      }
      methods[name] = call;
    }
    return methods as DomainClient<D>;
  }

  /** Every item of a paginated list, a page at a time (`query.limit` sets the page size). */
  async *#pages(spec: OperationSpec, input: AnyInput = {}): AsyncIterable<unknown> {
    const limit = Number(input.query?.limit ?? PAGE_SIZE);
    let offset = Number(input.query?.offset ?? 0);
    let cursor = input.query?.cursor as string | undefined;
    for (;;) {
      const { offset: _offset, cursor: _cursor, ...query } = input.query ?? {};
      const window = cursor === undefined ? { offset } : { cursor };
      const { data, meta } = await this.#call(spec, { ...input, query: { ...query, limit, ...window } });
      const items = itemsOf(spec, data);
      yield* items;
      offset += items.length;
      if (items.length === 0 || items.length < limit) return;
      // A list that pages by cursor goes on while it gives one; by offset, up to its total (unless estimated).
      if (meta?.next_cursor !== undefined) cursor = meta.next_cursor;
      else if (cursor !== undefined || meta?.total === undefined || (meta.total_estimated !== true && offset >= meta.total)) return;
    }
  }

  async #page(spec: OperationSpec, input: AnyInput = {}): Promise<Page<unknown>> {
    const { data, meta } = await this.#call(spec, input);
    const items = itemsOf(spec, data);
    return {
      items,
      total: meta?.total ?? items.length,
      limit: meta?.limit ?? items.length,
      offset: meta?.offset ?? 0,
      ...(meta?.total_estimated === true && { totalEstimated: true }),
      ...(meta?.next_cursor !== undefined && { nextCursor: meta.next_cursor }),
    };
  }

  /** One operation; `bytes`: it answers with bytes (BYTE_ANSWERS), resolved to the Response. */
  async #call(
    [method, template, flag]: OperationSpec,
    input: AnyInput,
    bytes = false,
  ): Promise<{ data: unknown; meta?: Envelope['meta'] }> {
    const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = input.path?.[name];
      if (value === undefined) throw new TypeError(`${method} ${template}: missing path parameter '${name}'`);
      // `path` is a route's wildcard, the rest of the URL (a trigger hook's path): it keeps its slashes.
      return name === 'path' ? String(value).split('/').map(encodeURIComponent).join('/') : encodeURIComponent(String(value));
    });
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(input.query ?? {})) if (value !== undefined) search.set(key, String(value));
    const pathWithQuery = search.size > 0 ? `${path}?${search}` : path;
    const response = await this.#send(method, pathWithQuery, input.body, input.headers ?? {}, input.signal, flag !== PUBLIC);
    if (bytes || !(response.headers.get('content-type') ?? '').includes('json')) return { data: response };
    const envelope = (await response.json()) as Envelope;
    return { data: envelope.data, meta: envelope.meta };
  }

  /**
   * One authenticated request with retries, for paths the operation table does not know;
   * throws SwitchboardError on an error status. `body` is JSON unless it is a FormData, Blob,
   * stream, Uint8Array or string, which are sent as they are.
   */
  request(
    method: string,
    pathWithQuery: string,
    body?: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Response> {
    return this.#send(method.toUpperCase(), pathWithQuery, body, headers, signal, true);
  }

  async #send(
    method: string,
    pathWithQuery: string,
    body: unknown,
    extraHeaders: Record<string, string>,
    signal: AbortSignal | undefined,
    authenticate: boolean,
  ): Promise<Response> {
    const headers: Record<string, string> = { ...extraHeaders };
    const signer = authenticate ? this.#signer : undefined;
    const { payload, bodySha256 } = await encodeBody(body, headers, signer);
    // A stream can be sent only once.
    const retries = payload instanceof ReadableStream ? 0 : this.#retries;
    // A create that carries an idempotency key (a send) is as safe to repeat as a GET: the
    // server answers a repeat with the first one's result.
    const idempotent = IDEMPOTENT.has(method) || hasIdempotencyKey(body);
    for (let attempt = 0; ; attempt++) {
      const credentials = authenticate ? this.#credentials(method, pathWithQuery, bodySha256) : {};
      // Made for each attempt: bytes may be sent as a stream, which is read once.
      const sent = payload instanceof Uint8Array ? this.bytesBody(payload) : payload;
      let response: Response;
      try {
        response = await fetch(this.url + pathWithQuery, {
          method,
          headers: { ...headers, ...credentials },
          body: sent,
          signal,
          // The cookie goes to the console's own origin only (the fetch default, said explicitly).
          ...(this.#session ? { credentials: 'same-origin' } : {}),
          ...(sent instanceof ReadableStream ? { duplex: 'half' } : {}),
        } as RequestInit);
      } catch (error) {
        if (attempt >= retries || !idempotent || signal?.aborted) throw error;
        const delayMs = this.#backoff(attempt);
        this.#onRetry?.({ method, path: pathWithQuery, attempt, delayMs, error });
        await sleep(delayMs, signal);
        continue;
      }
      if (response.ok || response.status === 304) return response;
      // 429 is refused before any work is done, so every method may repeat it; 5xx only idempotent ones.
      const retryable = response.status === 429 || (response.status >= 500 && idempotent);
      if (retryable && attempt < retries) {
        await response.body?.cancel();
        const retryAfter = response.headers.get('retry-after');
        const delayMs = retryAfterMs(retryAfter) ?? this.#backoff(attempt);
        this.#onRetry?.({ method, path: pathWithQuery, attempt, delayMs, status: response.status, retryAfter });
        await sleep(delayMs, signal);
        continue;
      }
      throw await toError(response);
    }
  }

  /**
   * The agent's channel (a WebSocket, Node only): sends confirmed frame by frame, and pushed
   * messages for the agent worker. Shared: one per client and agent id while it is open (the
   * first opener's options apply); rejects with a SwitchboardError when the server refuses the
   * upgrade (404 from a server or proxy without it, 401, 403).
   */
  channel(options: ChannelOptions = {}): Promise<Channel> {
    const key = options.agentId ?? '';
    let channel = this.#channels.get(key);
    if (!channel) {
      const opening = this.#openChannel(options);
      this.#channels.set(key, (channel = opening));
      const forget = () => this.#channels.get(key) === opening && this.#channels.delete(key);
      opening.then((open) => open.closed.then(forget), forget);
    }
    return channel;
  }

  async #openChannel(options: ChannelOptions): Promise<Channel> {
    const search = new URLSearchParams();
    if (options.agentId !== undefined) search.set('agent_id', options.agentId);
    if (options.visibilityTimeoutSeconds !== undefined) search.set('visibility_timeout', String(options.visibilityTimeoutSeconds));
    const pathWithQuery = `/api/v1/messaging/channel${search.size > 0 ? `?${search}` : ''}`;
    const socket = await this.openSocket(
      this.url.replace(/^http/, 'ws') + pathWithQuery,
      this.#credentials('GET', pathWithQuery, EMPTY_SHA256),
    );
    return new Channel(socket, options);
  }

  /**
   * Opens a WebSocket with these headers (the credentials), or rejects with the server's answer
   * as a SwitchboardError. A browser's WebSocket cannot send headers: the Node client (index.ts)
   * opens one with ws.
   */
  protected openSocket(_url: string, _headers: Record<string, string>): Promise<ChannelSocket> {
    return Promise.reject(
      new SwitchboardError(
        0,
        'unsupported',
        'The channel needs the Node client (a WebSocket with headers); use long polling here',
        undefined,
      ),
    );
  }

  /** Bytes as fetch is given them: whole (a browser streams a request body only over HTTP/2); the Node client streams them. */
  protected bytesBody(bytes: Uint8Array): Uint8Array | ReadableStream<Uint8Array> {
    return bytes;
  }

  /** The hex SHA-256 of a payload sent by reference: WebCrypto here; node:crypto in the Node client. */
  protected sha256Hex(bytes: Uint8Array): Promise<string> {
    return sha256Hex(bytes);
  }

  /** Exponential backoff with jitter: 100 ms, 200 ms, 400 ms… (half to full), capped. */
  #backoff(attempt: number): number {
    return Math.min(this.#maxBackoffMs, 100 * 2 ** attempt) * (0.5 + Math.random() / 2);
  }

  #credentials(method: string, pathWithQuery: string, bodySha256: string): Record<string, string> {
    if (this.#signer) return this.#signer.headers(method, pathWithQuery, bodySha256);
    if (this.#session) return this.#session.csrfToken === undefined ? {} : { 'x-csrf-token': this.#session.csrfToken };
    // Without credentials an operation that needs them is sent as it is, and the server answers 401.
    return this.#apiKey === undefined ? {} : { authorization: `Bearer ${this.#apiKey}` };
  }
}

async function toError(response: Response): Promise<SwitchboardError> {
  const text = await response.text();
  let envelope: Envelope = {};
  try {
    envelope = JSON.parse(text) as Envelope;
  } catch {
    // Not an envelope (a proxy's page): the status and text are all there is.
  }
  const error = envelope.error;
  return new SwitchboardError(
    response.status,
    error?.code ?? 'http_error',
    error?.message ?? (text || response.statusText),
    envelope.meta?.request_id ?? response.headers.get('x-request-id') ?? undefined,
    error?.details,
  );
}
