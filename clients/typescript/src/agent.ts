import { context, SpanKind, trace } from '@opentelemetry/api';
import { contextOf, failed, traceparentOf, tracer } from './tracing.js';
import { MAX_CREDIT } from './limits.js';
import { topicMatches } from './topics.js';
import type { Channel } from './channel.js';
import { HandlerUsage, withHandlerUsage } from './gen-ai-usage.js';
import type { Switchboard } from './client.js';
import { SwitchboardError } from './errors.js';
import type { UsageReport } from './shapes.js';
import { hydrate } from './hydrate.js';
import { handling, type HandledMessage, type HandlerContext } from './step-context.js';
import type { Body, Message } from './types.js';

/** Thrown by a handler when retrying cannot help: the message is dead-lettered at once. */
export class PermanentError extends Error {
  override name = 'PermanentError';
}

/**
 * Handles one message; what it returns (or resolves to) is the acknowledgement's `output`, or
 * `withUsage(output, usage)` to report what the work consumed with it (else what the GenAI spans
 * it started reported, with `genAiUsageProcessor` on the tracer provider). A plan step's message
 * carries the step's latest `checkpoint`; `ctx.checkpoint(state)` saves a new one.
 */
export type Handler = (message: HandledMessage, ctx: HandlerContext) => unknown;

/** A handler's output and the usage (model, tokens, cost) the acknowledgement records with it. */
export class WithUsage {
  constructor(
    readonly output: unknown,
    readonly usage: UsageReport,
  ) {}
}

/** What a handler returns to acknowledge with `output` and record `usage` (a plain object would be taken for the output). */
export function withUsage(output: unknown, usage: UsageReport): WithUsage {
  return new WithUsage(output, usage);
}

/** What an `approval.requested` message asks of an agent named among a human step's approvers. */
export interface ApprovalRequest {
  run_id: string;
  plan_id: string;
  plan_version: number;
  step_id: string;
  prompt?: string;
  approvers: string[];
  /** When the step stops waiting (its timeout), and the link with it. */
  expires_at: string;
  /** A link that decides the step without a key, for handing to a person. */
  approve_url: string;
  /** The message it came in. */
  message: Message;
}

/** An agent approver's answer: decide now (with a comment kept beside the decision), or leave it to the others. */
export type ApprovalDecision = 'approve' | 'reject' | { approved: boolean; comment?: string } | undefined;

export type ApprovalHandler = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;

export interface AgentOptions {
  client: Switchboard;
  agentId: string;
  /** Registered on start (capability names, or full registrations without agent_id and groups). */
  capabilities?: Array<string | Omit<Body<'discovery.registerCapability'>, 'agent_id' | 'groups'>>;
  /** Discovery groups every capability is registered in. */
  groups?: string[];
  /** Topics (or patterns: `*` one token, final `>` one or more) subscribed to on start. */
  topics?: string[];
  /** 0 disables heartbeats. Default 10 s. */
  heartbeatIntervalMs?: number;
  /** Messages handled at once. Default 4. */
  concurrency?: number;
  /** Seconds a received message stays leased; extended at half of it while its handler runs. Default 30. */
  visibilityTimeoutSeconds?: number;
  /** Seconds one long poll waits; also the longest stop() waits for it. Default 5. */
  pollTimeoutSeconds?: number;
  /**
   * How messages arrive: 'channel' pushes them over the agent's WebSocket (`client.channel()`),
   * with acks, rejects, extends and heartbeats as its frames; 'poll' long-polls over HTTP;
   * 'auto' (default) uses the channel when the server offers it and long polls when the
   * upgrade fails (a 404 from an older server or a proxy), but not when it is refused (401, 403).
   */
  transport?: 'auto' | 'channel' | 'poll';
  /** Called with every error of the loop itself (network, server); the loop goes on. */
  onError?: (error: unknown) => void;
  /**
   * Where the worker reports what an operator should know: a handler's failure (once per
   * delivery, with the message id and reason), a server it cannot reach (once, then once when it
   * is back). Default: the console.
   */
  logger?: AgentLogger;
}

/** The lines the worker writes (the console, pino and most loggers fit). */
export interface AgentLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** A one-line reason: the API's message for its errors, the cause's for network ones ("fetch failed"). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}

export interface Agent {
  /**
   * Routes messages by `event_name`: an exact name (`routine.execute`, `plan.step.execute`, a
   * topic), a pattern in the subscription syntax (`orders.*`, `orders.>`), or `*` for any.
   * An exact name wins, then the patterns in the order they were added, then `*`.
   */
  on(eventName: string, handler: Handler): Agent;
  /**
   * Decides the human steps that name this agent among their `approvers`: the handler gets each
   * `approval.requested` and answers approve, reject or nothing (another approver, or a person
   * with the link, decides). A step decided meanwhile is not an error. Without one, those
   * messages are acknowledged and logged, never dead-lettered.
   */
  onApproval(handler: ApprovalHandler): Agent;
  /** Registers capabilities and subscriptions, starts heartbeats and the inbox loop. */
  start(): Promise<void>;
  /**
   * Stops polling and waits for every handler that received a message to finish and be
   * acknowledged or rejected. Leaves discovery and the topics only with `{ deregister: true }`.
   */
  stop(options?: { deregister?: boolean }): Promise<void>;
  /** Messages being handled now. */
  readonly inFlight: number;
  /** How messages arrive, once started: over the channel or by long polling. */
  readonly transport: 'channel' | 'poll' | null;
}

/** What the platform sends each agent named among a human step's approvers. */
const APPROVAL_REQUESTED = 'approval.requested';

/** Whether 'auto' long-polls after the channel failed to open: anything but a refusal of the credentials. */
function fallsBackToPoll(error: unknown): boolean {
  return !(error instanceof SwitchboardError && (error.status === 401 || error.status === 403));
}

/**
 * An agent worker: registers its capabilities, heartbeats its load, takes messages from its
 * inbox (pushed over the channel, or by long polling: see `transport`) and runs handlers with bounded concurrency, acknowledging with the handler's return value or
 * rejecting with its error (requeued unless it is a PermanentError).
 */
export function createAgent(options: AgentOptions): Agent {
  const { client, agentId } = options;
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const visibility = options.visibilityTimeoutSeconds ?? 30;
  const pollSeconds = options.pollTimeoutSeconds ?? 5;
  const logger = options.logger ?? console;
  // Whether the last call to the server failed: a lost server is told once, and its return.
  let failingSince: number | null = null;
  const onError = (error: unknown) => {
    options.onError?.(error);
    if (failingSince !== null) return;
    failingSince = Date.now();
    logger.error(`agent ${agentId}: cannot reach the server (${describe(error)}); retrying`);
  };
  const reached = () => {
    if (failingSince === null) return;
    logger.info(`agent ${agentId}: reached the server again after ${Math.round((Date.now() - failingSince) / 1000)} s`);
    failingSince = null;
  };
  const handlers: Array<{ pattern: string; handler: Handler }> = [];
  let approvalHandler: ApprovalHandler | undefined;
  const running = new Set<Promise<void>>();
  const subscriptions = new Set<string>();
  let active = false;
  let loop: Promise<void> | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let slotFreed: (() => void) | undefined;
  const transport = options.transport ?? 'auto';
  let using: 'channel' | 'poll' | null = null;
  /** The channel messages arrive on, while it is open. */
  let channel: Channel | undefined;
  const open = () => (channel?.open ? channel : undefined);

  /** An exact name, then patterns, then the approval handler (for its messages), then `*`. */
  function route(eventName: string): Handler | undefined {
    const approval = eventName === APPROVAL_REQUESTED ? decide : undefined;
    return (
      handlers.find(({ pattern }) => pattern === eventName)?.handler ??
      handlers.find(({ pattern }) => pattern !== '*' && topicMatches(pattern, eventName))?.handler ??
      (approvalHandler ? approval : undefined) ??
      handlers.find(({ pattern }) => pattern === '*')?.handler ??
      approval
    );
  }

  /** An `approval.requested` message no `on()` handler took: the approval handler's decision, if any. */
  async function decide(message: Message): Promise<unknown> {
    const request = { ...(message.payload as Omit<ApprovalRequest, 'message'>), message };
    if (!approvalHandler) {
      logger.info(
        `agent ${agentId}: step ${request.step_id} of run ${request.run_id} waits for an approval; no onApproval handler here, so a person decides it`,
      );
      return { decision: null };
    }
    const answer = await approvalHandler(request);
    if (answer === undefined) return { decision: null };
    const body = typeof answer === 'string' ? { approved: answer === 'approve' } : answer;
    try {
      await client.coordination.approveStep({ path: { run_id: request.run_id, step_id: request.step_id }, body });
    } catch (error) {
      // Decided by someone else first, cancelled, or past its timeout: nothing is left to decide.
      if (error instanceof SwitchboardError && error.status === 409) return { decision: null, already: error.message };
      throw error;
    }
    return { decision: body.approved ? 'approved' : 'rejected' };
  }

  async function handle(message: Message): Promise<void> {
    let settled = false;
    const lease = setInterval(
      () => {
        // An extend racing the acknowledgement finds the message settled: not an error worth reporting.
        (
          open()?.extend(message.message_id, visibility) ??
          client.messaging.extend({ body: { message_id: message.message_id, visibility_timeout: visibility } })
        ).catch((error: unknown) => settled || onError(error));
      },
      (visibility * 1000) / 2,
    );
    // The handler runs in a `process {agent}` span whose parent is the message's traceparent, so
    // the agent's own spans continue the sender's trace; the acknowledgement or rejection carries
    // it on. Without an OpenTelemetry SDK in this process the API is a no-op and the message's
    // own traceparent is passed on unchanged.
    const span = tracer().startSpan(
      `process ${agentId}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          'messaging.system': 'switchboard',
          'messaging.operation.name': 'process',
          'messaging.operation.type': 'process',
          'messaging.destination.name': agentId,
          'messaging.message.id': message.message_id,
          'messaging.message.delivery_count': message.retry_count + 1,
          'switchboard.message.event_name': message.event_name,
        },
      },
      contextOf(message.traceparent),
    );
    const spanContext = trace.setSpan(contextOf(message.traceparent), span);
    const traceparent = traceparentOf(spanContext);
    const headers = traceparent ? { traceparent } : undefined;
    try {
      const handler = route(message.event_name);
      if (!handler) throw new PermanentError(`agent ${agentId} has no handler for '${message.event_name}'`);
      // What travelled by reference is fetched (and checked) before the handler sees the message.
      const handled = handling(client, await hydrate(message));
      // The spans the handler's call starts count their GenAI usage here (genAiUsageProcessor):
      // what they sum is the acknowledgement's usage when the handler reports none.
      const spans = new HandlerUsage();
      const result = await context.with(withHandlerUsage(spanContext, spans), () => handler(handled.message, handled.ctx));
      const reported = spans.close();
      const { output, usage } = result instanceof WithUsage ? result : { output: result, usage: reported };
      // Over the channel when it is open (batched with the tick's others), else over HTTP: a
      // message that came on a channel since closed is settled all the same.
      await (open()?.acknowledge(message.message_id, output, usage) ??
        client.messaging.acknowledge({ body: { message_id: message.message_id, output, usage }, headers }));
    } catch (error) {
      failed(span, error);
      const reason = (error instanceof Error ? error.message : String(error)) || 'handler failed';
      const requeue = !(error instanceof PermanentError);
      logger.warn(
        `agent ${agentId}: message ${message.message_id} (${message.event_name}, delivery ${message.retry_count + 1}) failed: ${reason}${requeue ? '' : ' (permanent)'}`,
      );
      const rejection = { message_id: message.message_id, reason: reason.slice(0, 4000), requeue };
      await (open()?.reject(rejection) ?? client.messaging.reject({ body: rejection, headers })).catch(onError);
    } finally {
      settled = true;
      clearInterval(lease);
      span.end();
    }
  }

  function beat(): void {
    const load = running.size / concurrency;
    (open()?.heartbeat({ load }) ?? client.discovery.heartbeat({ body: { agent_id: agentId, load } })).then(reached, onError);
  }

  function dispatch(message: Message): void {
    const task = handle(message).finally(() => {
      running.delete(task);
      slotFreed?.();
      // The slot goes back to the server as credit (not once stopping: the channel drains).
      if (active) open()?.grant(1);
    });
    running.add(task);
  }

  const openChannel = () => client.channel({ agentId, visibilityTimeoutSeconds: visibility });

  /**
   * Handles what the channel pushes, `concurrency` at most at once (the credit), until stop();
   * a dropped channel is reopened after a second, or long polling takes over when 'auto' finds
   * the channel gone from the server.
   */
  async function listen(first: Channel): Promise<void> {
    for (let current = first; ;) {
      channel = current;
      const unlisten = current.onMessage(dispatch);
      current.grant(Math.min(concurrency - running.size, MAX_CREDIT));
      const closed = await current.closed;
      unlisten();
      channel = undefined;
      if (!active) return;
      onError(closed);
      const next = await reopen();
      if (next === 'poll') return poll();
      if (!next) return;
      current = next;
    }
  }

  /** The channel again, once the server takes it; 'poll' when 'auto' finds it gone; undefined once stopping. */
  async function reopen(): Promise<Channel | 'poll' | undefined> {
    while (active) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if (!active) return undefined;
      try {
        const reopened = await openChannel();
        reached();
        return reopened;
      } catch (error) {
        if (transport === 'auto' && error instanceof SwitchboardError && error.status === 404) {
          using = 'poll';
          return 'poll';
        }
        onError(error);
      }
    }
    return undefined;
  }

  async function poll(): Promise<void> {
    while (active) {
      if (running.size >= concurrency) {
        await new Promise<void>((resolve) => (slotFreed = resolve));
        continue;
      }
      let messages: Message[] = [];
      try {
        ({ messages } = await client.messaging.receive({
          query: { agent_id: agentId, timeout: pollSeconds, max: concurrency - running.size, visibility_timeout: visibility },
        }));
        reached();
      } catch (error) {
        onError(error);
        if (active) await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      // Whatever was received is handled even when stop() came meanwhile: nothing leased is dropped.
      for (const message of messages) dispatch(message);
    }
  }

  const agent: Agent = {
    on(eventName, handler) {
      handlers.push({ pattern: eventName, handler });
      return agent;
    },
    onApproval(handler) {
      approvalHandler = handler;
      return agent;
    },
    async start() {
      if (active) return;
      for (const capability of options.capabilities ?? []) {
        const registration = typeof capability === 'string' ? { capability } : capability;
        await client.discovery.registerCapability({
          body: { ...registration, agent_id: agentId, ...(options.groups ? { groups: options.groups } : {}) },
        });
      }
      for (const topic of options.topics ?? []) {
        const subscription = await client.messaging.subscribe({ body: { agent_id: agentId, topic } });
        subscriptions.add(subscription.id);
      }
      let first: Channel | undefined;
      if (transport !== 'poll') {
        try {
          first = await openChannel();
        } catch (error) {
          if (transport === 'channel' || !fallsBackToPoll(error)) throw error;
          logger.info(`agent ${agentId}: no channel on this server (${describe(error)}); long polling`);
        }
      }
      using = first ? 'channel' : 'poll';
      active = true;
      // The loop first: the channel it takes carries the first heartbeat too.
      loop = first ? listen(first) : poll();
      const interval = options.heartbeatIntervalMs ?? 10_000;
      if (interval > 0) {
        beat();
        heartbeat = setInterval(beat, interval);
      }
    },
    async stop(stopOptions = {}) {
      active = false;
      clearInterval(heartbeat);
      slotFreed?.();
      // Messages pushed while the handlers finish are handled too; then the channel closes.
      while (running.size > 0) await Promise.all(running);
      await channel?.close();
      await loop;
      await Promise.all(running);
      if (stopOptions.deregister) {
        for (const id of subscriptions) await client.messaging.unsubscribe({ path: { subscription_id: id } });
        subscriptions.clear();
        await client.discovery.deregisterAgent({ path: { agent_id: agentId } });
      }
    },
    get inFlight() {
      return running.size;
    },
    get transport() {
      return using;
    },
  };
  return agent;
}
