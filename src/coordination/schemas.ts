import { Type, type Static } from '@sinclair/typebox';
import { CursorPageQuery, JsonObject, NullableTimestamp, PageQuery, PayloadRefSchema, Reason, Timestamp } from '../http/schemas.js';
import { USERNAME_PATTERN } from '../auth/schemas.js';
import { RunPriority } from './plan-schemas.js';

/** Runs, their events, and the decisions of human steps (approvals inbox, approval links); plans are plan-schemas.ts. */

export const RunStatus = Type.Union(
  [
    Type.Literal('queued'),
    Type.Literal('running'),
    Type.Literal('waiting'),
    Type.Literal('completed'),
    Type.Literal('failed'),
    Type.Literal('cancelled'),
  ],
  {
    description:
      "queued: held by its plan's concurrency or rate limit (blocked_by says which); waiting: blocked on a person, a timer, an event or an agent",
  },
);
export const StepBlockedBy = Type.Union([Type.Literal('no_agent'), Type.Literal('budget'), Type.Null()], {
  description:
    'A capability step waiting (status waiting) until its timeout: no_agent, for a healthy agent with the capability; budget, for one a budget paused to be resumed',
});
export const RunBlockedBy = Type.Union(
  [Type.Literal('concurrency'), Type.Literal('rate_limit'), Type.Literal('no_agent'), Type.Literal('budget'), Type.Null()],
  { description: "Why the run waits: its plan's concurrency or rate limit (queued), or a step waiting for an agent (no_agent, budget)" },
);
export const StepStatus = Type.Union(
  ['pending', 'running', 'waiting', 'completed', 'failed', 'skipped', 'cancelled'].map((s) => Type.Literal(s)),
  { description: 'waiting: a human step awaiting its decision or data' },
);

export const Adaptive = Type.Object(
  {
    enabled: Type.Boolean(),
    max_revisions: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'default 3' })),
  },
  { additionalProperties: false, description: 'Re-route failed capability steps to another healthy agent' },
);

const RunTag = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9_.:/=-]{0,63}$',
  description: 'A tag: letters, digits and _ . : / = - (at most 64)',
});
const METADATA_KEY = '[A-Za-z0-9][A-Za-z0-9_.-]{0,63}';
const METADATA_VALUE_LENGTH = 256;
const RunMetadata = Type.Record(Type.String(), Type.String({ maxLength: METADATA_VALUE_LENGTH }), {
  propertyNames: { pattern: `^${METADATA_KEY}$` },
  maxProperties: 20,
  description:
    'Text values by key (letters, digits and _ . -, at most 64) to find the run by (GET /runs?metadata=key=value); at most 20 keys, values up to 256 characters',
});

export const StartRunBody = Type.Object(
  {
    plan_id: Type.String({ minLength: 1, maxLength: 200, description: 'Plan id or alias (its current version is pinned)' }),
    input: Type.Optional(JsonObject),
    adaptive: Type.Optional(Adaptive),
    tags: Type.Optional(Type.Array(RunTag, { maxItems: 20, description: 'Tags to find the run by (GET /runs?tag=); at most 20' })),
    metadata: Type.Optional(RunMetadata),
    priority: Type.Optional(RunPriority),
  },
  { additionalProperties: false },
);
export type StartRunBody = Static<typeof StartRunBody>;

const UsageSum = Type.Object(
  {
    count: Type.Integer(),
    input_tokens: Type.Integer(),
    output_tokens: Type.Integer(),
    cached_tokens: Type.Integer(),
    cost_usd: Type.Number(),
  },
  { title: 'UsageSum', description: 'The usage agents reported for it (GET of one run only)' },
);

export const Checkpoint = Type.Object(
  {
    state: Type.Unknown({ description: 'What the agent saved (any JSON, at most 1 MiB)' }),
    saved_at: Timestamp,
    attempt: Type.Integer({ description: 'The attempt that saved it' }),
  },
  { title: 'StepCheckpoint' },
);

export const CheckpointBody = Type.Object(
  { state: Type.Unknown({ description: 'Any JSON, at most 1 MiB' }) },
  { additionalProperties: false },
);

const LogLevel = (description?: string) =>
  Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')], { description });

export const StepLogBody = Type.Object(
  {
    message: Type.String({ minLength: 1, maxLength: 4000 }),
    level: Type.Optional(LogLevel('Default info')),
  },
  { additionalProperties: false },
);

export const StepLogLine = Type.Object(
  {
    seq: Type.Integer({ description: "Its place among all steps' lines" }),
    step_id: Type.String(),
    attempt: Type.Integer({ description: 'The attempt that wrote it' }),
    level: LogLevel(),
    message: Type.String(),
    at: Timestamp,
  },
  { title: 'StepLogLine' },
);

export const RunStep = Type.Object(
  {
    id: Type.String({ description: 'Step id; a for_each item is <step>[<index>]' }),
    type: Type.String(),
    status: StepStatus,
    attempt: Type.Integer(),
    agent: Type.Union([Type.String(), Type.Null()], { description: 'agent steps: the agent of the latest attempt' }),
    child_run_id: Type.Union([Type.String(), Type.Null()], { description: 'sub_plan steps: the child run' }),
    started_at: NullableTimestamp,
    completed_at: NullableTimestamp,
    input: Type.Unknown({ description: 'The resolved input (templates applied); null when it travels by reference (input_ref)' }),
    input_ref: Type.Optional(PayloadRefSchema('input')),
    output: Type.Unknown({ description: 'Null when it travels by reference (output_ref)' }),
    output_ref: Type.Optional(PayloadRefSchema('output')),
    error: Type.Union([Type.String(), Type.Null()]),
    usage: Type.Optional(UsageSum),
    checkpoint: Type.Union([Checkpoint, Type.Null()], { description: 'agent steps: the latest progress its agent saved' }),
    blocked_by: StepBlockedBy,
    reused: Type.Boolean({ description: "A rerun's step that kept the earlier run's outcome rather than running again" }),
  },
  { title: 'RunStep' },
);

export const Revision = Type.Object(
  { step: Type.String(), reason: Type.String(), change: JsonObject, at: Timestamp },
  { title: 'RunRevision' },
);

export const Run = Type.Object(
  {
    id: Type.String(),
    plan_id: Type.String(),
    plan_version: Type.Integer(),
    status: RunStatus,
    blocked_by: RunBlockedBy,
    priority: RunPriority,
    current_step: Type.Union([Type.String(), Type.Null()], {
      description: 'The first step (in plan order) in progress; null when finished',
    }),
    input: JsonObject,
    output: Type.Unknown({ description: 'Null when it travels by reference (output_ref)' }),
    output_ref: Type.Optional(PayloadRefSchema('output')),
    error: Type.Union([Type.String(), Type.Null()]),
    adaptive: Type.Union([Adaptive, Type.Null()]),
    revisions: Type.Array(Revision),
    parent_run_id: Type.Union([Type.String(), Type.Null()]),
    rerun_of: Type.Union([Type.String(), Type.Null()], { description: 'The run this one reran from one of its steps' }),
    steps: Type.Array(RunStep),
    tags: Type.Array(Type.String(), { description: 'The tags the run was started with, in name order' }),
    metadata: Type.Record(Type.String(), Type.String(), { description: 'The metadata the run was started with' }),
    created_by: Type.String(),
    started_at: Timestamp,
    completed_at: NullableTimestamp,
    usage: Type.Optional(UsageSum),
  },
  { title: 'Run' },
);

export const RerunBody = Type.Object(
  {
    from_step: Type.String({ minLength: 1, maxLength: 100, description: 'The step to run again, with every step that follows it' }),
    input: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "The new run's input; the earlier run's when absent" })),
    step_inputs: Type.Optional(
      Type.Record(Type.String({ maxLength: 100 }), Type.Record(Type.String(), Type.Unknown()), {
        description: "Agent steps that run again: the input each is given instead of its template's",
      }),
    ),
    plan_version: Type.Optional(
      Type.Union([Type.Literal('same'), Type.Literal('latest')], {
        description: "The earlier run's plan version (default) or the plan's current one",
      }),
    ),
  },
  { additionalProperties: false },
);

const Finished = Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')]);
export const ReplayBody = Type.Object(
  {
    filter: Type.Object(
      {
        plan_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Plan id or alias' })),
        status: Type.Optional(Finished),
        after: Type.Optional(Type.String({ format: 'date-time', description: 'Only runs started at or after this time' })),
        before: Type.Optional(Type.String({ format: 'date-time', description: 'Only runs started before this time' })),
        error: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Only runs whose error contains this text' })),
      },
      { additionalProperties: false },
    ),
    replay_from: Type.Union([Type.Literal('start'), Type.Literal('failed_step')], {
      description: 'Run each again from its start, or from the step it failed at (runs that failed at none are passed over)',
    }),
    dry_run: Type.Optional(Type.Boolean({ description: 'Only count and name the runs it would replay' })),
  },
  { additionalProperties: false },
);

export const Replayed = Type.Object(
  {
    count: Type.Integer(),
    run_ids: Type.Array(Type.String(), {
      description: 'The new runs (rerun_of the replayed ones); with dry_run, the runs it would replay',
    }),
    matched: Type.Integer({
      description: 'The runs the filter matched, those passed over (no failed step) and those left over (truncated) included',
    }),
    truncated: Type.Boolean({
      description: 'More runs matched than one call takes: replay again (with after, or once these have run) for the rest',
    }),
  },
  { title: 'Replayed' },
);

export const RunParams = Type.Object({ run_id: Type.String({ minLength: 1, maxLength: 200 }) });
export const RunStepParams = Type.Object({ run_id: RunParams.properties.run_id, step_id: Type.String({ minLength: 1, maxLength: 100 }) });

export const RunLogsQuery = Type.Composite([
  PageQuery,
  Type.Object({ step_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "Only this step's lines" })) }),
]);

export const ListRunsQuery = Type.Composite([
  CursorPageQuery,
  Type.Object({
    plan_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Plan id or alias' })),
    status: Type.Optional(RunStatus),
    started_after: Type.Optional(Type.String({ format: 'date-time', description: 'Only runs started at or after this time (ISO 8601)' })),
    started_before: Type.Optional(Type.String({ format: 'date-time', description: 'Only runs started before this time (ISO 8601)' })),
    tag: Type.Optional(RunTag),
    metadata: Type.Optional(
      Type.String({
        pattern: `^${METADATA_KEY}=`,
        maxLength: 64 + 1 + METADATA_VALUE_LENGTH,
        description: 'key=value: only runs started with this value for this metadata key',
      }),
    ),
  }),
]);

const Approved = Type.Boolean({ description: 'true approves the step; false rejects it, which fails the run' });
const DecisionComment = Type.String({ maxLength: 4000, description: "Kept with the decision, in the step's output" });
export const ApproveBody = Type.Object(
  { approved: Approved, comment: Type.Optional(DecisionComment), reason: Type.Optional(Reason) },
  { additionalProperties: false },
);
const StepData = Type.Record(Type.String(), Type.Unknown(), { description: "The answer: a JSON object matching the step's schema" });
export const InputBody = Type.Object({ data: StepData, reason: Type.Optional(Reason) }, { additionalProperties: false });

export const ApprovalLinkParams = Type.Object({
  token: Type.String({
    minLength: 1,
    maxLength: 2048,
    pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
    description: 'The token of an approve_url',
  }),
});
export const LinkDecisionBody = Type.Union([
  Type.Object({ approved: Approved, comment: Type.Optional(DecisionComment) }, { additionalProperties: false }),
  Type.Object({ data: StepData }, { additionalProperties: false }),
]);
/** What a waiting human step asks, as the approvals inbox and an approval link show it. */
const HumanStepFields = {
  run_id: Type.String(),
  plan_id: Type.String(),
  step_id: Type.String(),
  type: Type.Union([Type.Literal('human_approval'), Type.Literal('human_input')]),
  prompt: Type.Union([Type.String(), Type.Null()]),
  schema: Type.Union([JsonObject, Type.Null()], { description: 'human_input: the JSON Schema the data must match' }),
  run_input: JsonObject,
};
export const LinkedStep = Type.Object(
  {
    ...HumanStepFields,
    approver: Type.Union([Type.String(), Type.Null()], {
      description:
        "Who the link decides as (an agent id, or user:<username>); null for the event's link, which decides nothing by itself (a signed-in person decides)",
    }),
    expires_at: Timestamp,
    outputs: Type.Record(Type.String(), Type.Unknown(), { description: "The outputs of the run's completed steps, by step id" }),
  },
  { title: 'LinkedStep' },
);
export type LinkedStep = Static<typeof LinkedStep>;
export const LinkDecision = Type.Object(
  {
    run_id: Type.String(),
    step_id: Type.String(),
    status: Type.String({ description: "The step's status after the decision: completed, or failed for a rejection" }),
    decided_by: Type.String({
      description: 'The id of who decided: the agent the link was sent to, or the user it was made for (their user id)',
    }),
    decided_by_kind: Type.Union([Type.Literal('agent'), Type.Literal('user')]),
    decided_at: Timestamp,
  },
  { title: 'LinkDecision' },
);
export type LinkDecision = Static<typeof LinkDecision>;

export const CreateLinkBody = Type.Object(
  {
    approver: Type.String({
      pattern: `^user:${USERNAME_PATTERN.slice(1)}`,
      description: 'user:<username>: the person the link decides as (the caller themselves, or anyone the step accepts when an admin asks)',
    }),
  },
  { additionalProperties: false },
);
export const ApprovalLink = Type.Object(
  {
    run_id: Type.String(),
    step_id: Type.String(),
    approver: Type.String(),
    approve_url: Type.String({ description: 'Decides the step as the approver, once, without signing in; send it to them only' }),
    expires_at: Timestamp,
  },
  { title: 'ApprovalLink' },
);
export type ApprovalLink = Static<typeof ApprovalLink>;

export const PendingApproval = Type.Object(
  {
    ...HumanStepFields,
    approvers: Type.Array(Type.String(), { description: 'human_approval: who may decide (empty: anyone)' }),
    waiting_since: NullableTimestamp,
    expires_at: NullableTimestamp,
  },
  { title: 'PendingApproval' },
);
export type PendingApproval = Static<typeof PendingApproval>;

export const RunEvent = Type.Object(
  {
    seq: Type.Integer(),
    type: Type.String({
      description: 'run.started, step.started, step.completed, step.failed, step.retrying, step.skipped, step.waiting, …',
    }),
    step_id: Type.Union([Type.String(), Type.Null()]),
    detail: JsonObject,
    at: Timestamp,
  },
  { title: 'RunEvent' },
);
