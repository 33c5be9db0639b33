import {
  A2A_PROTOCOL_VERSION,
  Message,
  Role,
  TaskState,
  type AgentCard,
  type AgentSkill,
  type Artifact,
  type Part,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import {
  A2AError,
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { Logger } from 'pino';
import { iso } from '../kernel/clock.js';
import { AppError, Conflict, Forbidden, NotFound } from '../kernel/errors.js';
import { isFinal, type A2aCaller, type A2aService, type AgentSkillSource, type RouteRequest } from './service.js';
import type { A2aTaskRow } from './store.js';
import type { A2aTaskState } from './tables.js';

/** Where routes put the request's caller and agent for the handler (ServerCallContext.state). */
export const CALLER = 'switchboard.caller';
export const AGENT_ID = 'switchboard.agent_id';
/** Aborted when the request's client goes away: its stream stops watching. */
export const SIGNAL = 'switchboard.signal';
/** A blocking SendMessage waits at most this long for a final state, then answers the task as it is. */
const MAX_BLOCK_MS = 25_000;

const STATES: Record<A2aTaskState, TaskState> = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
};

/** What an agent card says about how to reach and authenticate (shared by every card). */
function cardBase(url: string, baseUrl: string, version: string) {
  return {
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: { organization: 'Switchboard', url: baseUrl },
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme' as const,
          value: { description: 'A Switchboard API key', scheme: 'Bearer', bearerFormat: 'API key' },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    signatures: [],
  };
}

/** An agent's card: its capabilities as skills (tagged with its groups), reached through Switchboard. */
export function agentCard(agentId: string, capabilities: AgentSkillSource[], baseUrl: string, version: string): AgentCard {
  const groups = [...new Set(capabilities.flatMap((c) => c.groups))].sort();
  const skills: AgentSkill[] = capabilities.map((c) => ({
    id: c.capability,
    name: c.capability,
    description: typeof c.metadata.description === 'string' ? c.metadata.description : `Capability '${c.capability}' of agent '${agentId}'`,
    tags: [c.capability, ...c.groups.map((g) => `group:${g}`)],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  }));
  return {
    name: agentId,
    description: `Agent '${agentId}' on Switchboard${groups.length > 0 ? `, in groups ${groups.join(', ')}` : ''}. A message becomes a message in its inbox; the task completes with its acknowledgement.`,
    ...cardBase(`${baseUrl}/a2a/${encodeURIComponent(agentId)}`, baseUrl, version),
    skills,
  };
}

/**
 * Switchboard's own card (public, as A2A discovery expects): its JSON-RPC endpoint routes each
 * message to a registered agent, and every registered capability is one of its skills (names and
 * descriptions, no agent ids). Each agent also has its own card at
 * `/a2a/{agent_id}/.well-known/agent-card.json` (an API key is needed).
 */
export function serverCard(baseUrl: string, version: string, offered: { capability: string; description: string | null }[]): AgentCard {
  return {
    name: 'Switchboard',
    description:
      'A control plane for software agents. A message sent here goes to the best healthy agent for the skill named in its ' +
      "metadata (`skill`, and optionally `strategy`), or for the capability that best matches its text; the task follows that agent's work. " +
      `Every registered agent is also an A2A agent: its card is at ${baseUrl}/a2a/{agent_id}/.well-known/agent-card.json and its ` +
      `JSON-RPC endpoint at ${baseUrl}/a2a/{agent_id} (Bearer API key).`,
    ...cardBase(`${baseUrl}/a2a`, baseUrl, version),
    skills: offered.map(({ capability, description }) => ({
      id: capability,
      name: capability,
      description: description ?? `Capability '${capability}' of the agents registered on Switchboard`,
      tags: [capability],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
  };
}

/** Where a message to the server's own endpoint goes: `skill` and `strategy` from the request's or the message's metadata, and its text. */
function routeOf(params: { message: Message | undefined; metadata: Record<string, unknown> | undefined }): RouteRequest {
  const named = (key: string): string | undefined => {
    const value = params.metadata?.[key] ?? params.message?.metadata?.[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value === '') throw new RequestMalformedError(`metadata.${key} must be a non-empty string`);
    return value;
  };
  const text = (params.message?.parts ?? []).flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : [])).join('\n');
  const skill = named('skill') ?? null;
  if (skill === null && text.trim() === '')
    throw new RequestMalformedError('Name a skill in metadata.skill, or send text to match against the registered capabilities');
  return { skill, strategy: named('strategy'), text };
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** An acknowledgement's output as a part: text as text, any other JSON as data. */
function outputPart(output: unknown): Part {
  if (typeof output === 'string') return textPart(output);
  return { content: { $case: 'data', value: output }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

function agentMessage(row: A2aTaskRow, text: string): Message {
  return {
    messageId: `${row.id}:status`,
    contextId: row.context_id,
    taskId: row.id,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function artifactOf(row: A2aTaskRow): Artifact | null {
  if (row.state !== 'completed' || row.output === null) return null;
  return {
    artifactId: 'output',
    name: 'output',
    description: "The agent's acknowledgement output",
    parts: [outputPart(JSON.parse(row.output))],
    metadata: undefined,
    extensions: [],
  };
}

function statusOf(row: A2aTaskRow) {
  return {
    state: STATES[row.state],
    message: row.reason === null ? undefined : agentMessage(row, row.reason),
    timestamp: iso(row.updated_at) ?? undefined,
  };
}

export function taskOf(row: A2aTaskRow, historyLength?: number): Task {
  const artifact = artifactOf(row);
  return {
    id: row.id,
    contextId: row.context_id,
    status: statusOf(row),
    artifacts: artifact ? [artifact] : [],
    history: historyLength === 0 ? [] : [Message.fromJSON(JSON.parse(row.request))],
    metadata: { switchboard_message_id: row.message_id, agent_id: row.agent_id },
  };
}

/** A task's change as stream events: its artifact (when it completed), then its status. */
function updatesOf(row: A2aTaskRow): StreamResponse[] {
  const artifact = artifactOf(row);
  const events: StreamResponse[] = [];
  if (artifact) {
    events.push({
      payload: {
        $case: 'artifactUpdate',
        value: { taskId: row.id, contextId: row.context_id, artifact, append: false, lastChunk: true, metadata: undefined },
      },
    });
  }
  events.push({
    payload: { $case: 'statusUpdate', value: { taskId: row.id, contextId: row.context_id, status: statusOf(row), metadata: undefined } },
  });
  return events;
}

/**
 * A2A's request handler over the service: translates A2A's requests and objects to tasks and
 * back, and the service's errors to A2A's. The routes put the caller and the agent in the call
 * context; one handler serves every agent. Push notifications, task lists and extended cards
 * are not offered.
 */
export class A2aHandler implements A2ARequestHandler {
  constructor(
    private readonly service: A2aService,
    private readonly options: { baseUrl: () => string; version: string; shutdown: AbortSignal; logger: Logger },
  ) {}

  /** The caller, the agent of the endpoint called (null: the server's own), and when to stop. */
  private target(context: ServerCallContext): { caller: A2aCaller; agentId: string | null; signal: AbortSignal } {
    const gone = context.state.get(SIGNAL) as AbortSignal;
    return {
      caller: context.state.get(CALLER) as A2aCaller,
      agentId: context.state.get(AGENT_ID) as string | null,
      signal: AbortSignal.any([gone, this.options.shutdown]),
    };
  }

  async getAgentCard(): Promise<AgentCard> {
    return serverCard(this.options.baseUrl(), this.options.version, await this.service.offered());
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError();
  }

  /** A new task for the endpoint's agent, or for the agent discovery routes the message to. */
  private async start(
    caller: A2aCaller,
    agentId: string | null,
    params: Parameters<A2ARequestHandler['sendMessage']>[0],
  ): Promise<A2aTaskRow> {
    const input = this.input(params);
    return this.translated(async () => this.service.send(caller, agentId ?? (await this.service.route(routeOf(params))), input));
  }

  async sendMessage(params: Parameters<A2ARequestHandler['sendMessage']>[0], context: ServerCallContext): Promise<Task> {
    const { caller, agentId, signal } = this.target(context);
    const row = await this.start(caller, agentId, params);
    if (params.configuration?.returnImmediately) return taskOf(row, params.configuration.historyLength);
    // Blocking (A2A's default): until the task is final, up to MAX_BLOCK_MS; then as it is.
    const stop = AbortSignal.any([signal, AbortSignal.timeout(MAX_BLOCK_MS)]);
    let last = row;
    for await (const next of this.service.watch(caller, row.agent_id, row.id, stop)) last = next;
    return taskOf(last, params.configuration?.historyLength);
  }

  async *sendMessageStream(
    params: Parameters<A2ARequestHandler['sendMessageStream']>[0],
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse> {
    const { caller, agentId, signal } = this.target(context);
    const row = await this.start(caller, agentId, params);
    yield* this.follow(caller, row.agent_id, row.id, signal);
  }

  async *resubscribe(params: Parameters<A2ARequestHandler['resubscribe']>[0], context: ServerCallContext): AsyncGenerator<StreamResponse> {
    const { caller, agentId, signal } = this.target(context);
    yield* this.follow(caller, agentId, params.id, signal);
  }

  /** The task, then its updates until it is final (or the client goes, or the server shuts down). */
  private async *follow(caller: A2aCaller, agentId: string | null, taskId: string, signal: AbortSignal): AsyncGenerator<StreamResponse> {
    let first = true;
    const watch = this.service.watch(caller, agentId, taskId, signal);
    for (;;) {
      const next = await this.translated(() => watch.next());
      if (next.done) return;
      if (first) yield { payload: { $case: 'task', value: taskOf(next.value) } };
      else yield* updatesOf(next.value);
      first = false;
      if (isFinal(next.value.state)) return;
    }
  }

  async getTask(params: Parameters<A2ARequestHandler['getTask']>[0], context: ServerCallContext): Promise<Task> {
    const { caller, agentId } = this.target(context);
    return taskOf(await this.translated(() => this.service.get(caller, agentId, params.id)), params.historyLength);
  }

  async cancelTask(params: Parameters<A2ARequestHandler['cancelTask']>[0], context: ServerCallContext): Promise<Task> {
    const { caller, agentId } = this.target(context);
    return taskOf(await this.translated(() => this.service.cancel(caller, agentId, params.id)));
  }

  async listTasks(): Promise<never> {
    throw new UnsupportedOperationError('ListTasks is not offered');
  }

  async createTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async getTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async listTaskPushNotificationConfigs(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async deleteTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  /** The message a send carries; one that continues a task is refused (one message, one task). */
  private input(params: { message: Message | undefined }): { contextId: string | null; message: unknown } {
    const message = params.message;
    if (!message || message.parts.length === 0 || message.messageId === '') {
      throw new RequestMalformedError('params.message with a messageId and at least one part is required');
    }
    if (message.role !== Role.ROLE_USER && message.role !== Role.ROLE_UNSPECIFIED)
      throw new RequestMalformedError('params.message.role must be ROLE_USER');
    if (message.taskId !== '')
      throw new UnsupportedOperationError('A message cannot continue a task here: each message is a task of its own; leave taskId out');
    return {
      contextId: message.contextId === '' ? null : message.contextId,
      message: Message.toJSON({ ...message, role: Role.ROLE_USER }),
    };
  }

  /** The service's errors as A2A's; anything unexpected is logged and told as an internal error. */
  private async translated<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof A2AError) throw err;
      if (err instanceof NotFound)
        throw err.message.startsWith('Task') ? new TaskNotFoundError(err.message) : new RequestMalformedError(err.message);
      if (err instanceof Conflict || err instanceof Forbidden) throw new TaskNotCancelableError(err.message);
      if (err instanceof AppError && err.status < 500) throw new RequestMalformedError(err.message);
      this.options.logger.error({ err }, 'A2A request failed');
      throw new Error('Internal error');
    }
  }
}
