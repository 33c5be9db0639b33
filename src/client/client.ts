import { createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { OPERATIONS, type Domain, type HttpMethod } from './operations.js';
import type { Bodies, Results } from './types.js';

/** An error envelope from the server (design §2), thrown by every client method. */
export class SwitchboardError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'SwitchboardError';
  }
}

export type SwitchboardOptions = ({ apiKey: string } | { agentId: string; privateKey: string | KeyObject }) & {
  url: string;
  /** Attempts after the first on 429 (any method) and 5xx/network errors (idempotent methods). Default 3. */
  retries?: number;
};

type Operations = typeof OPERATIONS;
type PathParams<P extends string> = P extends `${string}{${infer K}}${infer Rest}` ? K | PathParams<Rest> : never;
type Query = Record<string, string | number | boolean | undefined>;
type Key<D extends Domain, N extends keyof Operations[D]> = `${D}.${N & string}`;
// Operations whose shapes are not in types.ts exchange plain JSON, read by the caller.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export type CallInput<D extends Domain, N extends keyof Operations[D]> = (Operations[D][N] extends readonly [HttpMethod, infer P extends string]
  ? [PathParams<P>] extends [never]
    ? { path?: undefined }
    : { path: Record<PathParams<P>, string | number> }
  : never) & {
  query?: Query;
  /** JSON, or a stream/bytes/form sent as is (artifact uploads). */
  body?: Key<D, N> extends keyof Bodies ? Bodies[Key<D, N>] : unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
};

export type ResultOf<D extends Domain, N extends keyof Operations[D]> = Key<D, N> extends keyof Results ? Results[Key<D, N>] : Json;

type NeedsInput<D extends Domain, N extends keyof Operations[D]> = Operations[D][N] extends readonly [HttpMethod, infer P extends string]
  ? [PathParams<P>] extends [never]
    ? false
    : true
  : false;

export type Operation<D extends Domain, N extends keyof Operations[D]> = ((
  ...input: NeedsInput<D, N> extends true ? [input: CallInput<D, N>] : [input?: CallInput<D, N>]
) => Promise<ResultOf<D, N>>) &
  (N extends `list${string}` ? { all(...input: NeedsInput<D, N> extends true ? [input: CallInput<D, N>] : [input?: CallInput<D, N>]): AsyncIterable<Json> } : unknown);

export type DomainClient<D extends Domain> = { [N in keyof Operations[D]]: Operation<D, N> };

interface Envelope {
  data?: unknown;
  error?: { code: string; message: string; details?: unknown };
  meta?: { request_id?: string; total?: number };
}

const IDEMPOTENT = new Set(['GET', 'PUT', 'DELETE']);
const PAGE_SIZE = 100;

function isRaw(body: unknown): body is FormData | Blob | ReadableStream | Uint8Array | string {
  return body instanceof FormData || body instanceof Blob || body instanceof ReadableStream || body instanceof Uint8Array || typeof body === 'string';
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

/**
 * The Switchboard API client: one typed method per operation, grouped by domain
 * (`client.messaging.send({ body })`), authenticated with an API key or Ed25519 signatures.
 * Results are the envelope's `data`; binary downloads return the `Response` to stream.
 */
export class Switchboard {
  readonly auth: DomainClient<'auth'>;
  readonly messaging: DomainClient<'messaging'>;
  readonly discovery: DomainClient<'discovery'>;
  readonly routines: DomainClient<'routines'>;
  readonly projects: DomainClient<'projects'>;
  readonly tasks: DomainClient<'tasks'>;
  readonly coordination: DomainClient<'coordination'>;
  readonly artifacts: DomainClient<'artifacts'>;
  /** The agent this client signs as, when it signs. */
  readonly agentId: string | undefined;
  /** The server's base URL. */
  readonly url: string;
  readonly #apiKey: string | undefined;
  readonly #privateKey: KeyObject | undefined;
  readonly #retries: number;

  constructor(options: SwitchboardOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.#retries = options.retries ?? 3;
    if ('apiKey' in options) {
      this.#apiKey = options.apiKey;
    } else {
      this.agentId = options.agentId;
      this.#privateKey = typeof options.privateKey === 'string' ? createPrivateKey(options.privateKey) : options.privateKey;
    }
    this.auth = this.#domain('auth');
    this.messaging = this.#domain('messaging');
    this.discovery = this.#domain('discovery');
    this.routines = this.#domain('routines');
    this.projects = this.#domain('projects');
    this.tasks = this.#domain('tasks');
    this.coordination = this.#domain('coordination');
    this.artifacts = this.#domain('artifacts');
  }

  #domain<D extends Domain>(domain: D): DomainClient<D> {
    const methods: Record<string, unknown> = {};
    for (const [name, [method, template]] of Object.entries(OPERATIONS[domain] as Record<string, readonly [HttpMethod, string]>)) {
      const call = async (input: CallInput<D, never> = {} as CallInput<D, never>) => (await this.#call(method, template, input)).data;
      if (name.startsWith('list')) Object.assign(call, { all: (input?: CallInput<D, never>) => this.#pages(method, template, input) });
      methods[name] = call;
    }
    return methods as DomainClient<D>;
  }

  /** Every item of a list operation, a page at a time. */
  async *#pages(method: HttpMethod, template: string, input: CallInput<Domain, never> = {} as CallInput<Domain, never>): AsyncIterable<unknown> {
    const limit = Number(input.query?.limit ?? PAGE_SIZE);
    let offset = Number(input.query?.offset ?? 0);
    for (;;) {
      const { data, meta } = await this.#call(method, template, { ...input, query: { ...input.query, limit, offset } });
      const items = data as unknown[];
      yield* items;
      offset += items.length;
      if (items.length < limit || meta?.total === undefined || offset >= meta.total) return;
    }
  }

  async #call(method: HttpMethod, template: string, input: CallInput<Domain, never>): Promise<{ data: unknown; meta?: Envelope['meta'] }> {
    const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = (input.path as Record<string, string | number> | undefined)?.[name];
      if (value === undefined) throw new TypeError(`${method} ${template}: missing path parameter '${name}'`);
      // The hook path's rest ('*') keeps its slashes.
      return name === '*' ? String(value).split('/').map(encodeURIComponent).join('/') : encodeURIComponent(String(value));
    });
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(input.query ?? {})) if (value !== undefined) search.set(key, String(value));
    const pathWithQuery = search.size > 0 ? `${path}?${search}` : path;
    const response = await this.request(method, pathWithQuery, input.body, input.headers, input.signal);
    if (!(response.headers.get('content-type') ?? '').includes('json')) return { data: response };
    const envelope = (await response.json()) as Envelope;
    return { data: envelope.data, meta: envelope.meta };
  }

  /**
   * One authenticated request with retries; throws SwitchboardError on an error status. For
   * paths the table does not know (e.g. a signed URL the server handed out).
   */
  async request(method: string, pathWithQuery: string, body?: unknown, extraHeaders: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { ...extraHeaders };
    let payload: RequestInit['body'];
    let bodyHash: string | undefined;
    if (body === undefined) {
      // No body: signed as the empty string's hash.
    } else if (isRaw(body)) {
      // Signed streamed bodies declare their hash (design §3), so they must be read first; bearer calls stream.
      payload = body instanceof Uint8Array ? new Blob([body]) : body;
      if (this.#privateKey) {
        const buffered = new Response(payload);
        const bytes = Buffer.from(await buffered.arrayBuffer());
        headers['content-type'] ??= buffered.headers.get('content-type') ?? 'application/octet-stream';
        payload = bytes;
        headers['x-content-sha256'] = createHash('sha256').update(bytes).digest('hex');
      }
    } else {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
      bodyHash = createHash('sha256').update(payload).digest('hex');
    }
    // A stream can be sent only once.
    const retries = payload instanceof ReadableStream ? 0 : this.#retries;
    for (let attempt = 0; ; attempt++) {
      const signed = { ...headers, ...this.#credentials(method, pathWithQuery, bodyHash ?? headers['x-content-sha256']) };
      let response: Response;
      try {
        response = await fetch(this.url + pathWithQuery, { method, headers: signed, body: payload, signal, ...(payload instanceof ReadableStream ? { duplex: 'half' } : {}) });
      } catch (error) {
        if (attempt >= retries || !IDEMPOTENT.has(method) || signal?.aborted) throw error;
        await sleep(backoff(attempt), signal);
        continue;
      }
      if (response.ok) return response;
      // 429 is refused before any work is done, so every method may repeat it; 5xx only idempotent ones.
      const retryable = response.status === 429 || (response.status >= 500 && IDEMPOTENT.has(method));
      if (retryable && attempt < retries) {
        await response.body?.cancel();
        const retryAfter = Number(response.headers.get('retry-after'));
        await sleep(Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : backoff(attempt), signal);
        continue;
      }
      throw await toError(response);
    }
  }

  #credentials(method: string, pathWithQuery: string, bodySha256: string | undefined): Record<string, string> {
    if (!this.#privateKey) return { authorization: `Bearer ${this.#apiKey}` };
    const timestamp = new Date().toISOString();
    const message = `${method.toUpperCase()}\n${pathWithQuery}\n${timestamp}\n${bodySha256 ?? createHash('sha256').update('').digest('hex')}`;
    return {
      'x-agent-id': this.agentId!,
      'x-timestamp': timestamp,
      'x-signature': sign(null, Buffer.from(message), this.#privateKey).toString('base64'),
    };
  }
}

function backoff(attempt: number): number {
  return Math.min(5_000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2);
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
  return new SwitchboardError(response.status, error?.code ?? 'http_error', error?.message ?? (text || response.statusText), envelope.meta?.request_id ?? response.headers.get('x-request-id') ?? undefined, error?.details);
}
