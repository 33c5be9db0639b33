import { Type, type Static } from '@sinclair/typebox';
import { AgentId, JsonObject, NullableTimestamp, PageQuery, Reason, Timestamp } from '../http/schemas.js';
import { STRATEGIES } from '../discovery/routing.js';
import { USERNAME_PATTERN } from '../auth/schemas.js';
import { STEP_TYPES } from './plan-definition.js';

const StepId = Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'Step id: letters, digits, _ and -, unique in the plan' });
const StepIds = Type.Array(StepId, { maxItems: 200 });
const Template = (description: string) => Type.Unknown({ description });
const Seconds = (description: string) => Type.Integer({ minimum: 1, maximum: 30 * 86_400, description });

/** The fields every step type may use; which ones a type requires is checked when the plan is saved. */
const stepFields = {
  type: Type.Union(
    STEP_TYPES.map((t) => Type.Literal(t)),
    { description: 'agent, human_approval, human_input, condition, parallel, wait, sub_plan or transform' },
  ),
  agent: Type.Optional(Type.Intersect([AgentId], { description: 'agent: the agent that executes the step (or capability)' })),
  capability: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'agent: pick an agent with this capability through discovery when the step starts',
    }),
  ),
  strategy: Type.Optional(
    Type.Union(
      STRATEGIES.map((s) => Type.Literal(s)),
      { description: 'agent with capability: the routing strategy (default first_available)' },
    ),
  ),
  input: Type.Optional(Type.Intersect([JsonObject], { description: 'agent, sub_plan: the input, with {{…}} templates' })),
  timeout_seconds: Type.Optional(
    Seconds('agent: fail the attempt without an acknowledgement in this time (default 3600); human_approval: decide on_timeout after it'),
  ),
  retry: Type.Optional(
    Type.Object(
      {
        max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Attempts in all (default 1)' })),
        backoff_seconds: Type.Optional(
          Type.Number({ minimum: 0, maximum: 3600, description: 'Delay before the 2nd attempt, doubled for each later one (default 0)' }),
        ),
      },
      { additionalProperties: false, description: 'agent: retries after a reject, dead letter or timeout' },
    ),
  ),
  prompt: Type.Optional(
    Type.String({
      maxLength: 10_000,
      description:
        "human_approval, human_input: what the person is asked (templates allowed; default 'Approve step <id> of plan <alias>?' or 'Provide the input of step <id> of plan <alias>')",
    }),
  ),
  approvers: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
      maxItems: 100,
      description:
        "human_approval: who may decide: 'user:<username>', 'role:<role>', 'agent:<agent_id>' or a bare agent id (default: anyone with approvals:decide; admins always). A named agent needs no approvals:decide",
    }),
  ),
  on_timeout: Type.Optional(
    Type.Union([Type.Literal('fail'), Type.Literal('approve'), Type.Literal('reject')], {
      description: 'human_approval: what timeout_seconds does (default fail)',
    }),
  ),
  schema: Type.Optional(
    Type.Intersect([JsonObject], {
      description: 'human_input: JSON Schema the submitted data must satisfy (default {type: object}: any JSON object)',
    }),
  ),
  expression: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 10_000,
      description:
        'condition, transform: JSONata over {input, steps, event} (and item in a for_each); a condition outputs {result, branch}',
    }),
  ),
  then: Type.Optional(
    Type.Union([StepId, StepIds], { description: 'condition: step(s) run when the expression is true (then and else are optional)' }),
  ),
  else: Type.Optional(Type.Union([StepId, StepIds], { description: 'condition: step(s) run when it is false' })),
  steps: Type.Optional(Type.Intersect([StepIds], { description: 'parallel: ids of steps started together; output keyed by id' })),
  for_each: Type.Optional(Template('parallel: an array, or a template yielding one; `step` runs once per item ({{item}})')),
  max_concurrency: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, description: 'parallel for_each: items in flight at once (default 10)' }),
  ),
  seconds: Type.Optional(Seconds('wait: this many seconds')),
  until: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'wait: until this ISO 8601 time (templates allowed)' })),
  event: Type.Optional(
    Type.Object(
      {
        topic: Type.String({ minLength: 1, maxLength: 255, description: 'Topic, exact or with * and > wildcards' }),
        match: Type.Optional(Type.Intersect([JsonObject], { description: 'Fields the published payload must equal (templates allowed)' })),
      },
      { additionalProperties: false, description: 'wait: until a matching payload is published' },
    ),
  ),
  plan_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'sub_plan: the plan (id or alias) whose run this step waits for' }),
  ),
  output: Type.Optional(Template('transform: the output, an object with {{…}} templates')),
};

const StepTemplate = Type.Object(stepFields, { additionalProperties: false, description: 'The step a for_each repeats (no id)' });

export const Step = Type.Object(
  {
    id: StepId,
    depends_on: Type.Optional(Type.Intersect([StepIds], { description: 'Steps that must finish first' })),
    ...stepFields,
    step: Type.Optional(StepTemplate),
  },
  { title: 'PlanStep', additionalProperties: false },
);

const RetentionDays = Type.Integer({
  minimum: 1,
  maximum: 36_500,
  description:
    'Days a finished run of this plan is kept (default: SWITCHBOARD_RUN_RETENTION_DAYS); runs keep the value of the version they started with',
});
const Alias = Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$', description: 'Unique plan alias' });

export const PlanBody = Type.Object(
  {
    alias: Alias,
    description: Type.Optional(Type.String({ maxLength: 4000 })),
    steps: Type.Array(Step, { maxItems: 200 }),
    output: Type.Optional(
      Type.Intersect([JsonObject], {
        description: 'Template object for the run output (default: outputs of the steps nothing depends on, by id)',
      }),
    ),
    retention_days: Type.Optional(RetentionDays),
  },
  { additionalProperties: false },
);
export type PlanBody = Static<typeof PlanBody>;

export const Plan = Type.Object(
  {
    id: Type.String(),
    alias: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    steps: Type.Array(Step),
    output: Type.Union([JsonObject, Type.Null()]),
    retention_days: Type.Union([RetentionDays, Type.Null()]),
    version: Type.Integer({ description: '1 on create, +1 on every update' }),
    created_by: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Plan' },
);

export const PlanParams = Type.Object({ plan_id: Type.String({ minLength: 1, maxLength: 200, description: 'Plan id or alias' }) });
export const VersionParams = Type.Object({ plan_id: PlanParams.properties.plan_id, version: Type.Integer({ minimum: 1 }) });

export const RunStatus = Type.Union(
  [Type.Literal('running'), Type.Literal('waiting'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')],
  { description: 'waiting: blocked on a person, a timer or an event' },
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
  },
  { additionalProperties: false },
);
export type StartRunBody = Static<typeof StartRunBody>;

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
    input: Type.Unknown({ description: 'The resolved input (templates applied)' }),
    output: Type.Unknown(),
    error: Type.Union([Type.String(), Type.Null()]),
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
    current_step: Type.Union([Type.String(), Type.Null()], {
      description: 'The first step (in plan order) in progress; null when finished',
    }),
    input: JsonObject,
    output: Type.Unknown(),
    error: Type.Union([Type.String(), Type.Null()]),
    adaptive: Type.Union([Adaptive, Type.Null()]),
    revisions: Type.Array(Revision),
    parent_run_id: Type.Union([Type.String(), Type.Null()]),
    steps: Type.Array(RunStep),
    tags: Type.Array(Type.String(), { description: 'The tags the run was started with, in name order' }),
    metadata: Type.Record(Type.String(), Type.String(), { description: 'The metadata the run was started with' }),
    created_by: Type.String(),
    started_at: Timestamp,
    completed_at: NullableTimestamp,
  },
  { title: 'Run' },
);

export const RunParams = Type.Object({ run_id: Type.String({ minLength: 1, maxLength: 200 }) });
export const RunStepParams = Type.Object({ run_id: RunParams.properties.run_id, step_id: Type.String({ minLength: 1, maxLength: 100 }) });

export const ListRunsQuery = Type.Composite([
  PageQuery,
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

const TriggerTypeSchema = Type.Union([Type.Literal('schedule'), Type.Literal('event'), Type.Literal('webhook')], {
  description:
    'schedule: on config.cron; event: on every publish to config.topic; webhook: on {method} /api/v1/coordination/hooks/{config.path}',
});

export const TriggerConfig = Type.Object(
  {
    cron: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'schedule: cron expression (5 fields, optional seconds field, or @hourly…)',
      }),
    ),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'schedule: IANA time zone (default UTC)' })),
    topic: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'event: topic, exact or with * and > wildcards' })),
    filter: Type.Optional(
      Type.String({ minLength: 1, maxLength: 4000, description: 'event: JSONata over {event}; a false result starts no run' }),
    ),
    path: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: "webhook: unique path, e.g. 'github/push' (a leading '/' is allowed: the same path)",
      }),
    ),
    method: Type.Optional(
      Type.Union(
        ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => Type.Literal(m)),
        { description: 'webhook: HTTP method (default POST)' },
      ),
    ),
  },
  { title: 'TriggerConfig', additionalProperties: false },
);

const TriggerInputField = Type.Intersect([JsonObject], { description: 'Fixed run input (input_mapping values override it)' });
const InputMapping = Type.Intersect([JsonObject], {
  description:
    'event and webhook: run input built from {{event.*}} templates (the payload or request body and query; events add topic and published_at)',
});

export const CreateTriggerBody = Type.Object(
  {
    plan_id: Type.String({ minLength: 1, maxLength: 200, description: 'Plan id or alias' }),
    type: TriggerTypeSchema,
    config: TriggerConfig,
    input: Type.Optional(TriggerInputField),
    input_mapping: Type.Optional(InputMapping),
    enabled: Type.Optional(Type.Boolean({ description: 'default true' })),
  },
  { additionalProperties: false },
);

export const UpdateTriggerBody = Type.Object(
  {
    config: Type.Optional(TriggerConfig),
    input: Type.Optional(TriggerInputField),
    input_mapping: Type.Optional(Type.Union([InputMapping, Type.Null()])),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const Trigger = Type.Object(
  {
    id: Type.String(),
    plan_id: Type.String(),
    type: TriggerTypeSchema,
    config: TriggerConfig,
    input: JsonObject,
    input_mapping: Type.Union([JsonObject, Type.Null()]),
    enabled: Type.Boolean(),
    next_fire_at: Type.Union([Timestamp, Type.Null()], { description: 'schedule: the next slot' }),
    last_fired_at: NullableTimestamp,
    created_by: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Trigger' },
);

export const TriggerParams = Type.Object({ trigger_id: Type.String({ minLength: 1, maxLength: 200 }) });
export const ListTriggersQuery = Type.Composite([
  PageQuery,
  Type.Object({ plan_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) }),
]);

export const Fire = Type.Object(
  {
    id: Type.String(),
    trigger_id: Type.String(),
    scheduled_for: NullableTimestamp,
    outcome: Type.Union(['started', 'skipped', 'filtered', 'failed'].map((o) => Type.Literal(o))),
    reason: Type.Union([Type.String(), Type.Null()]),
    run_id: Type.Union([Type.String(), Type.Null()]),
    at: Timestamp,
  },
  { title: 'TriggerFire' },
);

/** `*` is the rest of the URL after `hooks/`; the OpenAPI document names it `path`. */
export const HookParams = Type.Object({
  '*': Type.String({ minLength: 1, maxLength: 200, description: "A webhook trigger's config.path, slashes included (e.g. github/push)" }),
});
export const HookStarted = Type.Object({ run_id: Type.String() }, { title: 'HookStarted' });

export const GenerateBody = Type.Object(
  {
    goal: Type.String({
      minLength: 1,
      maxLength: 4000,
      description: 'What the plan should achieve, in plain words (sentences, "then", numbered lists)',
    }),
    constraints: Type.Optional(
      Type.Object(
        {
          require_human_approval: Type.Optional(
            Type.Boolean({ description: 'Add a human_approval step before the first step with side effects (or the last step)' }),
          ),
          max_steps: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 50,
              description: 'At most this many steps (default 10); the least relevant sub-goals are merged',
            }),
          ),
          available_agents: Type.Optional(Type.Array(AgentId, { maxItems: 500, description: 'Only these agents may be used' })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const GeneratedPlan = Type.Object(
  {
    steps: Type.Array(Step, { description: 'A valid plan body: POST it to /coordination/plans with an alias' }),
    description: Type.String(),
    estimated_duration: Type.String({
      description: 'ISO 8601 duration: medians of past steps per capability, else 60 s per agent step and 1 h per approval',
    }),
    unmatched: Type.Array(Type.String(), { description: 'Sub-goals no capability matched (left out, not invented)' }),
    planner: Type.Union([Type.Literal('local'), Type.Literal('llm')]),
  },
  { title: 'GeneratedPlan' },
);
