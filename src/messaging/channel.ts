import type { Logger } from 'pino';
import { AppError, Forbidden, InvalidRequest } from '../kernel/errors.js';
import type { AgentHeartbeats, SentMessage } from '../kernel/ports.js';
import type { UsageReport } from '../kernel/usage-ports.js';
import { MAX_CREDIT, type ChannelRequest, type ItemFailure } from './channel-schemas.js';
import { MAX_BATCH, MAX_WAIT_S, type InboxService, type InboxWatch } from './inbox.js';
import type { Caller, Message } from './messages.js';
import type { SubscriptionsService } from './subscriptions.js';

/** An ack frame's item that carries more than its id. */
type AckWith = { message_id: string; output?: unknown; usage?: UsageReport };

export interface ChannelDeps {
  inbox: InboxService;
  subscriptions: SubscriptionsService;
  heartbeats: AgentHeartbeats;
  logger: Logger;
}

/** How long the push loop waits after a failed claim (the database away) before it tries again. */
const RETRY_MS = 1000;

/** An AppError as the frame error a client reads; anything else is not the item's fault. */
function itemFailure(messageId: string, err: unknown): ItemFailure {
  if (!(err instanceof AppError)) throw err;
  return {
    message_id: messageId,
    error: { code: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) },
  };
}

/**
 * One agent connection's channel, without its transport: messages are leased
 * exactly as a long poll leases them (the same `receive`, so FIFO per destination, the same
 * visibility timeout, the same wake-ups across nodes) while the client has credit, each
 * pushed message spending one; requests act as the channel's agent and nobody else.
 */
export class AgentChannel {
  /** Messages the client may still be pushed. */
  private credit = 0;
  private pumping = false;
  private readonly closed = new AbortController();
  /** Frames act as the channel's agent: an admin's channel for agent X acts as X. */
  private readonly caller: Caller;

  constructor(
    private readonly deps: ChannelDeps,
    private readonly session: { actor: string; agentId: string; visibilitySeconds: number },
    /** Pushes what one claim leased, in order. */
    private readonly push: (messages: Message[]) => void,
    /** While the client has not read what it was pushed: a promise of when it has (else undefined). */
    private readonly unread: () => Promise<void> | undefined = () => undefined,
  ) {
    this.caller = { actor: session.actor, agentId: session.agentId, admin: false };
  }

  get agentId(): string {
    return this.session.agentId;
  }

  /** Opens the delivery window by `n`; the push loop runs while any is left. */
  grant(n: number): void {
    if (this.credit + n > MAX_CREDIT)
      throw InvalidRequest.field('credit', `would open the window to ${this.credit + n}; at most ${MAX_CREDIT}`);
    this.credit += n;
    if (this.pumping || this.closed.signal.aborted) return;
    this.pumping = true;
    void this.pump().finally(() => (this.pumping = false));
  }

  /** Ends the push loop; what it leased and could not push comes back when its lease runs out. */
  close(): void {
    this.closed.abort();
  }

  /**
   * Leases and pushes while the client has credit. One wake-up registration serves the whole
   * stretch (`watch`): after a claim that drained the inbox the next waits for a wake-up instead
   * of claiming again, so a message costs one claim, not a claim and an empty one.
   */
  private async pump(): Promise<void> {
    const watch = this.deps.inbox.watch(this.caller, this.agentId);
    try {
      await this.pumpWith(watch);
    } finally {
      this.deps.inbox.unwatch(watch);
    }
  }

  private async pumpWith(watch: InboxWatch): Promise<void> {
    const signal = this.closed.signal;
    while (this.credit > 0 && !signal.aborted) {
      const backlog = this.unread();
      if (backlog) {
        await backlog;
        continue;
      }
      let messages: Message[];
      try {
        // A long poll of the longest kind, again and again: it returns at once with what is
        // visible, else when a wake-up (this node's or another's) or the wait's end comes.
        messages = await this.deps.inbox.receive(
          this.caller,
          this.agentId,
          { waitSeconds: MAX_WAIT_S, max: Math.min(this.credit, MAX_BATCH), visibilitySeconds: this.session.visibilitySeconds },
          signal,
          watch,
        );
      } catch (err) {
        this.deps.logger.warn({ err, agent_id: this.agentId }, 'channel: could not lease messages; retrying');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, RETRY_MS);
          signal.addEventListener('abort', done, { once: true });
          function done() {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            resolve();
          }
        });
        continue;
      }
      this.credit -= messages.length;
      if (messages.length > 0) this.push(messages);
    }
  }

  /** Does what a request frame asks, as the channel's agent; resolves with the answer's `ok`. */
  async perform(frame: ChannelRequest): Promise<unknown> {
    // The items of a frame are settled at once: one message twice would race itself.
    const items = 'ack' in frame ? frame.ack : 'reject' in frame ? frame.reject : 'extend' in frame ? frame.extend : [];
    const ids = items.map((item) => (typeof item === 'string' ? item : item.message_id));
    if (new Set(ids).size !== ids.length)
      throw InvalidRequest.field(
        Object.keys(frame).find((key) => key !== 'id')!,
        'must not repeat a message id',
      );
    if ('ack' in frame) return this.acknowledge(frame.ack);
    if ('reject' in frame) {
      return this.settleEach(frame.reject, (item) => this.deps.inbox.reject(this.caller, item)).then(({ done, failed }) => ({
        rejected: done,
        failed,
      }));
    }
    if ('extend' in frame) {
      return this.settleEach(frame.extend, (item) => this.deps.inbox.extend(this.caller, item.message_id, item.visibility_timeout)).then(
        ({ done, failed }) => ({ extended: done, failed }),
      );
    }
    if ('send' in frame) return this.send(frame.send, frame.traceparent);
    if ('send_batch' in frame)
      return this.deps.inbox
        .send({ from: this.caller, messages: frame.send_batch.messages, batch: true })
        .then(({ messages }) => ({ messages }));
    if ('subscribe' in frame) {
      return this.deps.subscriptions
        .subscribe(this.caller, frame.subscribe.agent_id, frame.subscribe.topic)
        .then(({ subscription }) => subscription);
    }
    return this.deps.heartbeats.heartbeat(this.agentId, frame.heartbeat);
  }

  private async send(body: Extract<ChannelRequest, { send: unknown }>['send'], traceparent: string | undefined): Promise<SentMessage> {
    const { source, ...input } = body;
    if (source !== undefined && source !== this.agentId) throw new Forbidden(`This channel sends as '${this.agentId}', not as '${source}'`);
    return (await this.deps.inbox.send({ from: this.caller, messages: [input], traceparent })).messages[0]!;
  }

  /**
   * Acknowledges the ids without an output (with their usage, if any) in one transaction, as one
   * HTTP acknowledge would; when that is refused, each on its own, to tell which failed. Ids with
   * an output go each on its own (an output is one per acknowledgement).
   */
  private async acknowledge(items: Array<string | AckWith>) {
    const asItem = (item: string | AckWith): AckWith => (typeof item === 'string' ? { message_id: item } : item);
    const acks = items.map(asItem);
    const batched = acks.filter((item) => item.output === undefined);
    const withOutput = acks.filter((item) => item.output !== undefined);
    const ackOne = (item: AckWith) =>
      this.deps.inbox.acknowledge(this.caller, [item.message_id], item.output, item.usage && new Map([[item.message_id, item.usage]]));
    let singles = withOutput;
    if (batched.length > 0) {
      const usage = new Map(batched.flatMap((item) => (item.usage ? [[item.message_id, item.usage] as const] : [])));
      try {
        await this.deps.inbox.acknowledge(
          this.caller,
          batched.map((item) => item.message_id),
          undefined,
          usage,
        );
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        singles = [...batched, ...withOutput];
      }
    }
    const { done, failed } = await this.settleEach(singles, ackOne);
    const acknowledged = [
      ...(singles === withOutput ? batched.map((item) => item.message_id) : []),
      ...done.map((result) => result.acknowledged[0]!),
    ];
    return { acknowledged, failed };
  }

  /**
   * Each item on its own, at once: one refused (settled already, someone else's) does not stop
   * the rest. `done` keeps the items' order, without the failed ones.
   */
  private async settleEach<I extends { message_id: string }, R>(items: I[], settle: (item: I) => Promise<R>) {
    const outcomes = await Promise.all(
      items.map((item) =>
        settle(item).then(
          (result) => ({ result }),
          (err: unknown) => ({ failure: itemFailure(item.message_id, err) }),
        ),
      ),
    );
    const done: R[] = [];
    const failed: ItemFailure[] = [];
    for (const outcome of outcomes) {
      if ('failure' in outcome) failed.push(outcome.failure);
      else done.push(outcome.result);
    }
    return { done, failed };
  }
}
