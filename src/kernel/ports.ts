import type { Tx } from './tx.js';
import type { AuditActor } from './request-scope.js';
import type { PayloadRef } from './payload-refs.js';

export type { ClaimChecks, PayloadOwner, PayloadRef, SignedPayloadRef, StagedJson } from './payload-refs.js';
export { StagedPayload } from './payload-refs.js';

/**
 * Contracts between domains. A domain that needs another's behaviour depends on one of these
 * interfaces; the composition root (app.ts) hands it the implementing service. Calls that must
 * be atomic with the caller's own writes take the caller's transaction as `tx`, first (inside a
 * transaction, pass only its `tx`: on SQLite the one connection is held by it); `autocommit`
 * when there is none.
 */

/** Who produced a message and wants its outcome: a routine execution, a plan step… */
export interface MessageOrigin {
  /** Which producer's handler hears of the outcome (stored with the message as `origin_kind`). */
  kind: OriginKind;
  /** The producer's own id for the work (execution id, `run_id:step_id`, …). */
  ref: string;
}

export interface OutgoingMessage {
  /** The sending agent, or a platform sender such as `switchboard`. */
  source: string;
  destination: string;
  event_name: string;
  /** Any JSON value; default {}. */
  payload?: unknown;
  /** The payload as an artifact (ClaimChecks): then `payload` is absent. */
  payload_ref?: PayloadRef | { artifact_id: string };
  thread_id?: string;
  delivery_semantic?: 'at_least_once' | 'at_most_once';
  idempotency_key?: string;
  delay_seconds?: number;
  max_deliveries?: number;
  /** 0–9, higher first; default 4. */
  priority?: number;
  /** Messages of one key for one destination are delivered one at a time, in send order. */
  ordering_key?: string;
  /** Among equal priorities, receivers take keys in turn. */
  fairness_key?: string;
  origin?: MessageOrigin;
  /** The capability the message asks of its destination (a capability-routed plan step): routing's figures per capability. */
  capability?: string;
  /**
   * W3C trace context the send continues (a plan step's `invoke_agent` span, a routine fire):
   * the parent of its `send` span. Default: the active span.
   */
  traceparent?: string | null;
}

export interface SentMessage {
  message_id: string;
  status: 'sent';
  timestamp: string;
}

/** A send by a platform producer (a run's steps, a routine's fires, a task's unblocking, an A2A task). */
export interface SendRequest {
  /** In order; each names who sends it (`source`) and whose inbox it goes to (`destination`). */
  messages: readonly OutgoingMessage[];
  /**
   * The caller's transaction: the messages commit (or roll back) with its writes, and their
   * inboxes wake when it commits. Without one the send commits on its own and wakes them then.
   */
  tx?: Tx;
}

export interface SendResult {
  /** One per message of the request, in its order. */
  messages: SentMessage[];
  /** An idempotency key seen before: the message is the first send's, nothing was sent now. */
  replayed: boolean;
}

/** Implemented by messaging: puts work into agents' inboxes. */
export interface Inbox {
  /** The one door for sending: one insert however many messages. */
  send(request: SendRequest): Promise<SendResult>;
  /** Withdraws a message that has not been acknowledged yet (a cancelled step); no-op otherwise. */
  cancel(tx: Tx, messageId: string, reason: string): Promise<void>;
  /** Sets one field of a message not yet acknowledged (what its redelivery carries); no-op otherwise. */
  setPayloadField(tx: Tx, messageId: string, field: string, value: unknown): Promise<void>;
}

/**
 * What happened to a message that carried an origin: first delivered to its agent (a receive
 * leased it; may repeat on redelivery), then acknowledged, or failed for good.
 */
export interface MessageOutcome {
  message_id: string;
  origin: MessageOrigin;
  destination: string;
  status: 'delivered' | 'acknowledged' | 'dead_lettered';
  /** The acknowledge `output` (any JSON) when acknowledged. */
  output?: unknown;
  /** The output as an artifact, when it was over the inline limit (`output` still holds it). */
  output_ref?: PayloadRef;
  /** Why it was dead-lettered (reject reason, `requeue: false`, max deliveries, expiry). */
  reason?: string;
}

/**
 * Producers register one handler per origin kind. Messaging calls it inside the transaction
 * that acknowledges or dead-letters the messages, so the producer's state moves atomically
 * with them. A batch (a batch acknowledge) arrives in one call, in the order of the messages'
 * origin refs, so a producer can settle it in a few statements.
 */
export interface OutcomeHandler {
  /**
   * Also tell of `delivered` outcomes (a receive leased the message). They come inside the
   * lease's transaction on SQLite; on PostgreSQL, where a lease is one statement without a
   * transaction around it, in a transaction of their own right after it. Either way the
   * receive answers only once the handler has run.
   */
  readonly delivered: boolean;
  handle(tx: Tx, outcomes: MessageOutcome[]): Promise<void>;
  /**
   * A dead letter of this origin was redriven as `redriven_as` (which keeps the origin, so its
   * outcome comes back here), in the redrive's transaction: the producer may take the copy on
   * where the letter left off, or refuse the redrive by throwing.
   */
  redriven?(tx: Tx, letter: RedrivenLetter): Promise<void>;
}

/** A dead letter with an origin, redriven as a new message. */
export interface RedrivenLetter {
  message_id: string;
  origin: MessageOrigin;
  redriven_as: string;
  /** Who asked. */
  actor: string;
}

/**
 * Every producer of messages with an origin, by origin kind: messaging hands each outcome to
 * the handler named by its message's `origin_kind`, and app.ts fills in one per kind. The field
 * names are stored with messages (data), so a name never changes.
 */
export interface OutcomeHandlers {
  /** routines: an execution's message was delivered, acknowledged or dead-lettered. */
  routine_execution: OutcomeHandler;
  /** coordination: an agent step's message was acknowledged or dead-lettered (ref `run|step|attempt`). */
  plan_step: OutcomeHandler;
  /** a2a: an A2A task's message was delivered, acknowledged or dead-lettered (ref: the task id). */
  a2a_task: OutcomeHandler;
}

export type OriginKind = keyof OutcomeHandlers;

/** Implemented by messaging: wakes the receivers waiting on these inboxes (on every node), e.g. once an agent resumes. */
export interface InboxWaker {
  wake(agentIds: readonly string[]): void;
  /** Every inbox's (a global pause ended). */
  wakeAll(): void;
}

/** Implemented by discovery: the most messages an agent may hold leased at once (null: no limit). */
export interface AgentLimits {
  concurrencyOf(agentId: string): Promise<number | null>;
}

/** A published event (messaging `publish`), for coordination triggers and waits. */
export interface PublishedEvent {
  topic: string;
  payload: unknown;
  published_at: string;
  publisher: string;
}

/**
 * A publish as its listeners hear of it: a payload streamed to storage as the request arrived is
 * read back into memory only when a listener asks for the event (a trigger or wait it concerns).
 */
export interface Publication {
  topic: string;
  event(): Promise<PublishedEvent>;
}

export type PublishListener = (publication: Publication) => Promise<void>;

/**
 * Implemented by access groups (auth/groups): the groups an admin granted an agent, which open
 * what is shared with them (artifacts and their events). Not discovery's declared groups.
 */
export interface AgentGroups {
  groupsOf(agentId: string): Promise<string[]>;
}

/** Implemented by discovery: picks agents for a capability (plan steps, plan generation). */
export interface AgentDirectory {
  /** `tx`: the caller's transaction, when it looks up inside one (on SQLite it holds the connection). */
  lookup(
    tx: Tx,
    query: {
      capability: string;
      strategy?: string;
      group?: string;
      limit?: number;
      include_unhealthy?: boolean;
      /** Also agents a budget paused (left out otherwise). */
      include_paused?: boolean;
    },
  ): Promise<{ agent_id: string; capability: string; health: string; load: number | null }[]>;
  search(query: {
    query: string;
    top_k?: number;
    min_score?: number;
  }): Promise<
    { capability: { id: string; name: string; agent_id: string; metadata: Record<string, unknown> }; similarity_score: number }[]
  >;
}

/** Implemented by discovery: an agent's heartbeat, for the agent channel's heartbeat frames (messaging). */
export interface AgentHeartbeats {
  heartbeat(agentId: string, input: { load?: number; metadata?: Record<string, unknown> }): Promise<unknown>;
}

/** Implemented by messaging: what the platform measured about an agent's message handling. */
export interface DeliveryStats {
  /**
   * Per agent: median ms from delivery to acknowledgement, and acked / (acked + rejected +
   * dead-lettered), of its deliveries for `capability` when it has some (`of_capability`), else of all.
   */
  statsFor(tx: Tx, agents: readonly { agent_id: string; capability?: string }[]): Promise<Map<string, AgentDeliveryStats>>;
}

export interface AgentDeliveryStats {
  latency_ms: number | null;
  success_ratio: number | null;
  samples: number;
  /** The figures are of the capability asked about (else of every delivery of the agent). */
  of_capability: boolean;
}

/**
 * Every event type of the log, for type filters and the API's schema. A domain
 * that starts producing a new type adds it here.
 */
export const EVENT_TYPES = [
  'run.started',
  'run.waiting',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.redriven',
  'run.step.completed',
  'run.step.failed',
  // A line the agent executing a step appended to its log.
  'run.step.log',
  'approval.requested',
  'approval.decided',
  'approval.reminded',
  'approval.escalated',
  'input.requested',
  'input.submitted',
  'routine.execution.succeeded',
  'routine.execution.failed',
  // Operator actions on routines: PATCH enabled, a manual trigger.
  'routine.paused',
  'routine.resumed',
  'routine.triggered',
  'message.dead_lettered',
  'message.redriven',
  'agent.registered',
  'agent.health_changed',
  'agent.deregistered',
  'task.created',
  'task.updated',
  'task.unblocked',
  'task.commented',
  'task.deleted',
  'artifact.created',
  'artifact.version_created',
  'artifact.deleted',
  'key.created',
  'key.revoked',
  'webhook.disabled',
  'alert.fired',
  'alert.resolved',
  'budget.warning',
  'budget.exceeded',
  'budget.resumed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The actor of events that no request caused (workers, timers). */
export const SYSTEM_ACTOR = 'system';

/** One change worth telling someone, as a domain hands it to the log. */
export interface NewEvent {
  type: EventType;
  /** The id of the thing the event is about (`run_…`, `tsk_…`, an agent id …). */
  subject: string;
  /** The principal that made the request (its `actor`), or SYSTEM_ACTOR. */
  actor: string;
  /** What a listener needs without a second call. */
  data: Record<string, unknown>;
  /** The reason an operator's request gave (approve, input, cancel, key revoke, routine pause/trigger). */
  reason?: string | null;
  /**
   * Who besides admins may read it: absent = every principal (shared workspace objects);
   * otherwise only these agents and the members of these discovery groups (`{ agents: [] }`:
   * admins only).
   */
  readers?: { agents: string[]; groups?: string[] };
}

/**
 * Implemented by events: the durable log. `append` writes in the caller's
 * transaction (a transactional outbox: an aborted transaction leaves no event). On
 * PostgreSQL it holds a lock until the transaction ends, so appends commit in log order:
 * append last, when the transaction's other writes are done.
 */
export interface EventLog {
  append(tx: Tx, ...events: NewEvent[]): Promise<void>;
}

/** Implemented by messaging: the inboxes holding messages a receive would take now (alert rules' inbox_depth and inbox_age). */
export interface InboxReadings {
  /** Each such inbox: how many of its messages are ready, and when the oldest of them was sent. */
  readyInboxes(now: number): Promise<{ agent_id: string; depth: number; oldest_at: number }[]>;
}

/** Implemented by cluster: this node's id in the node registry, and which nodes are up. */
export interface NodeRegistry {
  readonly nodeId: string;
  /** The nodes whose heartbeat is fresh and that have not stopped (a node not listed is down or gone). */
  liveNodeIds(): Promise<string[]>;
  /**
   * Whether this node leads: the live node with the smallest id, where the jobs that run on one
   * node at a time run. A stopping node hands over at once, a dead one when it is down; nodes
   * may both lead for a moment while that news travels, so those jobs must bear an overlap.
   */
  leads(): Promise<boolean>;
}

/** A change to the control plane, as a service records it. */
export interface AuditedChange {
  /** What was done: `<resource type>.<verb>`, e.g. `plan.delete`. */
  action: string;
  resource: { type: string; id: string };
  /** Who did it, when not the caller of the request being served (a sign-in: the principal it opens a session for). */
  actor?: AuditActor;
}

/**
 * Implemented by audit: the audit log. A service records each change in the transaction that
 * makes it (the entry is appended when that transaction commits, so an aborted change leaves
 * no entry); who asked comes from the request being served (kernel/request-scope.ts).
 */
export interface AuditTrail {
  record(tx: Tx, change: AuditedChange): Promise<void>;
}

/** How much a notification matters; channels show it (Slack's header, an email's subject). */
export type NotificationSeverity = 'info' | 'warning' | 'critical';

/**
 * Something worth telling people or a triage agent (an alert, a step waiting for a human), as a
 * domain hands it to its channels; each channel type renders it in its own format.
 */
export interface Notification {
  title: string;
  text: string;
  severity: NotificationSeverity;
  /** Where to look: an absolute URL (the run in the console, the alert). */
  link?: string;
  /** Short facts shown as a list (run id, agent, value). */
  fields?: { name: string; value: string }[];
  /** A step waiting for a person: channels offer to approve it through its approval link. */
  human_step?: { run_id: string; step_id: string; approve_url: string };
}

/** What a notification became on one channel. */
export interface NotificationSent {
  channel_id: string;
  /** The notification's id (the `webhook-id` of its deliveries). */
  notification_id: string;
  /** webhook, slack, email: the delivery queued in the channel's delivery log. */
  delivery_id: string | null;
  /** agent: the message put into the agent's inbox. */
  message_id: string | null;
}

/** Implemented by notifications: sends a notification to channels, with the caller's writes. */
export interface NotificationChannels {
  /**
   * Queues the notification on each channel inside `tx` (deliveries commit or roll back with
   * the caller's writes; an agent's message is sent in it). An unknown channel id is a 404.
   */
  notify(tx: Tx, channelIds: readonly string[], notification: Notification): Promise<NotificationSent[]>;
  /** Those of `channelIds` that name no channel (deleted, or never made). */
  missing(tx: Tx, channelIds: readonly string[]): Promise<string[]>;
}

/** A notification channel's destination, as webhooks deliver to it. */
export interface DeliveryTarget {
  /** The channel's id (the target's deliveries are listed under it). */
  id: string;
  url: string;
  /** The channel's type: its deliveries are counted under it. */
  channelType: string;
  createdBy: string;
}

/**
 * Implemented by webhooks: delivery targets that other domains own (a notification channel's
 * URL or mailbox), delivered by the webhook delivery worker with its retries, backoff and
 * delivery log, like event webhooks' deliveries, but matched to no event.
 */
export interface DeliveryTargets {
  /**
   * Creates or changes target `id` (the owner's id); returns the Standard Webhooks secret its
   * deliveries are signed with (made when it is created, kept after). `url` is refused
   * (InvalidRequest on `field`) by the rules of event webhooks' URLs; a `mailto:` URL goes by email.
   */
  put(tx: Tx, target: DeliveryTarget, field: string): Promise<{ secret: string }>;
  /** Deletes target `id` with its delivery log. */
  remove(tx: Tx, id: string): Promise<void>;
  /** Queues one delivery of `payload` (the body sent) to target `id`; returns the delivery id. */
  enqueue(tx: Tx, id: string, message: { id: string; type: string; payload: string }): Promise<string>;
}

/** What one retention batch of a rule did: the rows it deleted by table, and whether its batch was full (more may be due). */
export interface RetentionBatch {
  readonly deleted: Readonly<Record<string, number>>;
  readonly more: boolean;
}

/**
 * One kind of row a domain lets go of: deletes at most `limit` of them whose keep time ended
 * before `now` (the domain knows its settings), with what belongs to them, in one short
 * transaction. The retention worker runs each domain's rules a batch at a time.
 */
export interface RetentionRule {
  readonly name: string;
  deleteExpired(now: number, limit: number): Promise<RetentionBatch>;
}
