import { ERROR_STATUS, type ErrorCode } from './error-codes.js';
import type { FrameError, FrameKind, ItemFailure, UsageReport } from './shapes.js';
import { SwitchboardError } from './errors.js';
import type { Body, Message, Result } from './types.js';

/*
 * The agent channel (GET /api/v1/messaging/channel, a WebSocket), client side. Browser-safe:
 * the socket comes from the caller (ws in Node, see node-socket.ts), nothing here imports it.
 */

/** What the channel uses of a WebSocket: ws's in Node, the DOM's elsewhere. */
export interface ChannelSocket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
}

export interface ChannelOptions {
  /** Whose channel: an admin key must name the agent; an agent's key may only name itself. Default: the caller. */
  agentId?: string;
  /** Seconds a pushed message stays leased (the connection's `visibility_timeout`). Default 30. Only the first opener's applies. */
  visibilityTimeoutSeconds?: number;
  /** Sends (and batch sends) not confirmed yet; further ones wait for a confirmation. Default 1000. */
  maxUnconfirmedSends?: number;
}

/** The channel's connection ended; what was waiting for an answer is rejected with this. */
export class ChannelClosedError extends Error {
  override name = 'ChannelClosedError';
  constructor(
    readonly code: number,
    readonly reason: string,
  ) {
    super(`The channel closed (${code}${reason ? `: ${reason}` : ''})`);
  }
}

type RejectItem = Body<'messaging.reject'>;
type RejectResult = Result<'messaging.reject'>;
type ExtendResult = Result<'messaging.extend'>;
type Acked = { acknowledged: string[]; failed: ItemFailure[] };
type Rejected = { rejected: RejectResult[]; failed: ItemFailure[] };
type Extended = { extended: ExtendResult[]; failed: ItemFailure[] };

const OPEN = 1;
const NORMAL_CLOSURE = 1000;
/** Attempts of a request frame the server refused for the rate limit. */
const RATE_LIMIT_RETRIES = 3;

function toError(error: FrameError): SwitchboardError {
  return new SwitchboardError(ERROR_STATUS[error.code as ErrorCode] ?? 0, error.code, error.message, undefined, error.details);
}

/** Items of one kind batched into one frame per tick, each with its own outcome. */
interface Pending<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * One WebSocket to the server for one agent (`client.channel()`): sends with per-frame
 * confirmation and back-pressure, and for the agent worker pushed messages within a credit
 * window, with acks, rejects and extends batched per tick. Not reopened when it closes: open
 * another with `client.channel()`.
 */
export class Channel {
  readonly #socket: ChannelSocket;
  readonly #maxUnconfirmed: number;
  #nextId = 1;
  readonly #answers = new Map<number, { resolve: (ok: unknown) => void; reject: (error: unknown) => void }>();
  readonly #listeners = new Set<(message: Message) => void>();
  #unconfirmed = 0;
  readonly #sendSlots: Array<() => void> = [];
  #acks: Pending<string | { message_id: string; output?: unknown; usage?: UsageReport }, void>[] = [];
  #rejects: Pending<RejectItem, RejectResult>[] = [];
  #extends: Pending<{ message_id: string; visibility_timeout: number }, ExtendResult>[] = [];
  #flushScheduled = false;
  #closedWith: ChannelClosedError | null = null;
  /** Resolves when the connection has ended, for whatever reason. */
  readonly closed: Promise<ChannelClosedError>;

  constructor(socket: ChannelSocket, options: ChannelOptions = {}) {
    this.#socket = socket;
    this.#maxUnconfirmed = Math.max(1, options.maxUnconfirmedSends ?? 1000);
    socket.addEventListener('message', (event) => this.#received(String(event.data)));
    this.closed = new Promise((resolve) =>
      socket.addEventListener('close', ({ code, reason }) => {
        const closed = (this.#closedWith = new ChannelClosedError(code, reason));
        for (const answer of this.#answers.values()) answer.reject(closed);
        this.#answers.clear();
        for (const pending of [...this.#acks, ...this.#rejects, ...this.#extends]) pending.reject(closed);
        this.#acks = [];
        this.#rejects = [];
        this.#extends = [];
        for (const slot of this.#sendSlots.splice(0)) slot();
        resolve(closed);
      }),
    );
  }

  /** Whether the connection is open (frames can be sent). */
  get open(): boolean {
    return this.#closedWith === null && this.#socket.readyState === OPEN;
  }

  /** Sends a message as the channel's agent; resolves when the server has stored it. */
  send(body: Body<'messaging.send'> & { source?: string }): Promise<Result<'messaging.send'>> {
    return this.#confirmed('send', body) as Promise<Result<'messaging.send'>>;
  }

  /** Sends up to 500 messages, all or nothing. */
  sendBatch(body: Body<'messaging.sendBatch'>): Promise<Result<'messaging.sendBatch'>> {
    return this.#confirmed('send_batch', body) as Promise<Result<'messaging.sendBatch'>>;
  }

  subscribe(body: Body<'messaging.subscribe'>): Promise<Result<'messaging.subscribe'>> {
    return this.#request('subscribe', body) as Promise<Result<'messaging.subscribe'>>;
  }

  /** The agent's heartbeat (its health in discovery); resolves with its health record. */
  heartbeat(body: Omit<Body<'discovery.heartbeat'>, 'agent_id'> = {}): Promise<Result<'discovery.heartbeat'>> {
    return this.#request('heartbeat', body) as Promise<Result<'discovery.heartbeat'>>;
  }

  /** Lets the server push `n` more messages (each pushed message spends one). */
  grant(n: number): void {
    if (n > 0 && this.open) this.#socket.send(JSON.stringify({ credit: n }));
  }

  /** Calls `listener` with every pushed message; returns what removes it. */
  onMessage(listener: (message: Message) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Acknowledges a pushed (or received) message, with what the work consumed (`usage`) when
   * given; batched with the others of this tick into one frame.
   */
  acknowledge(messageId: string, output?: unknown, usage?: UsageReport): Promise<void> {
    return this.#batched(this.#acks, output === undefined && usage === undefined ? messageId : { message_id: messageId, output, usage });
  }

  reject(item: RejectItem): Promise<RejectResult> {
    return this.#batched(this.#rejects, item);
  }

  extend(messageId: string, visibilityTimeoutSeconds: number): Promise<ExtendResult> {
    return this.#batched(this.#extends, { message_id: messageId, visibility_timeout: visibilityTimeoutSeconds });
  }

  /** Closes the connection; resolves once it has ended. What it leased and did not settle comes back after its lease. */
  close(): Promise<void> {
    if (this.#closedWith === null) this.#socket.close(NORMAL_CLOSURE, 'client closed');
    return this.closed.then(() => undefined);
  }

  #received(text: string): void {
    let frame: { id?: number; ok?: unknown; error?: FrameError; message?: Message };
    try {
      frame = JSON.parse(text) as typeof frame;
    } catch {
      return;
    }
    if (frame.message) {
      for (const listener of this.#listeners) listener(frame.message);
      return;
    }
    const answer = frame.id === undefined ? undefined : this.#answers.get(frame.id);
    if (!answer) return;
    this.#answers.delete(frame.id!);
    if (frame.error) answer.reject(toError(frame.error));
    else answer.resolve(frame.ok);
  }

  async #request(kind: FrameKind, body: unknown): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#once(kind, body);
      } catch (error) {
        // Refused before any work: as safe to repeat as an HTTP 429.
        if (!(error instanceof SwitchboardError && error.code === 'rate_limited') || attempt >= RATE_LIMIT_RETRIES) throw error;
        const seconds = (error.details as { retry_after_seconds?: number } | undefined)?.retry_after_seconds ?? 1;
        await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      }
    }
  }

  #once(kind: FrameKind, body: unknown): Promise<unknown> {
    if (this.#closedWith) return Promise.reject(this.#closedWith);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#answers.set(id, { resolve, reject });
      this.#socket.send(JSON.stringify({ id, [kind]: body }));
    });
  }

  /** A request counted against the unconfirmed-send window, waiting for a slot when it is full. */
  async #confirmed(kind: 'send' | 'send_batch', body: unknown): Promise<unknown> {
    while (this.#unconfirmed >= this.#maxUnconfirmed && !this.#closedWith)
      await new Promise<void>((resolve) => this.#sendSlots.push(resolve));
    this.#unconfirmed++;
    try {
      return await this.#request(kind, body);
    } finally {
      this.#unconfirmed--;
      this.#sendSlots.shift()?.();
    }
  }

  #batched<I, R>(queue: Pending<I, R>[], item: I): Promise<R> {
    if (this.#closedWith) return Promise.reject(this.#closedWith);
    return new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (this.#flushScheduled) return;
      this.#flushScheduled = true;
      setTimeout(() => this.#flush(), 0);
    });
  }

  /** One frame per kind for what this tick settled; each item resolves or fails on its own. */
  #flush(): void {
    this.#flushScheduled = false;
    const acks = this.#acks.splice(0);
    const rejects = this.#rejects.splice(0);
    const extendsNow = this.#extends.splice(0);
    this.#settle('ack', acks, (ok: Acked) => ok.acknowledged.map(() => undefined));
    this.#settle('reject', rejects, (ok: Rejected) => ok.rejected);
    this.#settle('extend', extendsNow, (ok: Extended) => ok.extended);
  }

  #settle<I, R, O extends { failed: ItemFailure[] }>(
    kind: 'ack' | 'reject' | 'extend',
    pending: Pending<I, R>[],
    results: (ok: O) => R[],
  ): void {
    const idOf = (item: I) => (typeof item === 'string' ? item : (item as { message_id: string }).message_id);
    // The server refuses a frame that names a message twice, and answers frames concurrently: a
    // repeat goes in a frame of its own once the first is answered.
    const seen = new Set<string>();
    const repeats = pending.filter((p) => seen.size === seen.add(idOf(p.item)).size);
    const firsts = pending.filter((p) => !repeats.includes(p));
    const requests: Promise<void>[] = [];
    for (let start = 0; start < firsts.length; start += 500) {
      const chunk = firsts.slice(start, start + 500);
      requests.push(
        this.#request(
          kind,
          chunk.map((p) => p.item),
        ).then(
          (answer) => {
            const ok = answer as O;
            const failures = new Map(ok.failed.map((f) => [f.message_id, f.error]));
            const done = results(ok);
            let next = 0;
            for (const p of chunk) {
              const failure = failures.get(idOf(p.item));
              if (failure) p.reject(toError(failure));
              else p.resolve(done[next++]!);
            }
          },
          (error: unknown) => chunk.forEach((p) => p.reject(error)),
        ),
      );
    }
    if (repeats.length > 0) void Promise.all(requests).then(() => this.#settle(kind, repeats, results));
  }
}
