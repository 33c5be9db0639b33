import { Type, type Static } from '@sinclair/typebox';
import { DebounceConfig } from '../debounce/schemas.js';
import { AgentId, JsonObject, NullableTimestamp, PageQuery, Reason, Timestamp } from '../http/schemas.js';

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'Routine name' });
const Description = Type.String({ maxLength: 4000, description: 'What the routine is for' });
const TriggerType = Type.Union([Type.Literal('cron'), Type.Literal('webhook')], {
  description: 'cron: fires on cron_expression; webhook: fires when its webhook URL is POSTed to',
});
const CronExpression = Type.String({
  minLength: 1,
  maxLength: 200,
  description: "Cron expression: 5 fields, an optional leading seconds field, or a nickname such as '@hourly'. Required for cron routines.",
});
const TimeZone = Type.String({
  minLength: 1,
  maxLength: 100,
  description: "IANA time zone of the schedule, e.g. 'Europe/Paris'; default UTC",
});
const TargetAgent = Type.Intersect([AgentId], { description: 'Agent whose inbox receives routine.execute' });
const Payload = Type.Intersect([JsonObject], { description: 'Payload sent to the agent with every execution' });
const Enabled = Type.Boolean({ description: 'false pauses the routine (it is kept); default true' });
const CatchUp = Type.Union([Type.Literal('none'), Type.Literal('latest'), Type.Literal('all')], {
  description:
    'Slots missed while the server was down: none (skip them), latest (fire the most recent once; default), all (fire each, at most 100)',
});
const Overlap = Type.Union([Type.Literal('allow'), Type.Literal('skip')], {
  description: 'skip: a slot is skipped while the previous execution is still pending or running; default allow',
});
const RoutineDebounce = Type.Union([DebounceConfig, Type.Null()], {
  description:
    "webhook routines: a burst of calls starts one execution, after `seconds` of quiet (or `max_wait_s` at most), with the last call's body; the key reads {{event.*}} (the body). null: every call starts one",
});
const TimeoutSeconds = Type.Integer({
  minimum: 1,
  maximum: 7 * 86_400,
  description: 'An execution not acknowledged within this many seconds fails; default 3600',
});

export const CreateRoutineBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    trigger_type: TriggerType,
    cron_expression: Type.Optional(CronExpression),
    timezone: Type.Optional(TimeZone),
    target_agent: TargetAgent,
    payload: Type.Optional(Payload),
    enabled: Type.Optional(Enabled),
    catch_up: Type.Optional(CatchUp),
    overlap: Type.Optional(Overlap),
    timeout_seconds: Type.Optional(TimeoutSeconds),
    debounce: Type.Optional(RoutineDebounce),
  },
  { additionalProperties: false },
);
export type CreateRoutineBody = Static<typeof CreateRoutineBody>;

export const UpdateRoutineBody = Type.Partial(Type.Object({ ...CreateRoutineBody.properties, reason: Reason }), {
  additionalProperties: false,
});
export type UpdateRoutineBody = Static<typeof UpdateRoutineBody>;

export const Routine = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    trigger_type: TriggerType,
    cron_expression: Type.Union([Type.String(), Type.Null()]),
    timezone: Type.String(),
    target_agent: Type.String(),
    payload: JsonObject,
    enabled: Type.Boolean(),
    catch_up: CatchUp,
    overlap: Overlap,
    timeout_seconds: Type.Integer(),
    debounce: RoutineDebounce,
    next_run_at: Type.Union([Timestamp, Type.Null()], { description: 'Next cron fire time; null for webhook or paused routines' }),
    last_run_at: NullableTimestamp,
    created_by: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
    webhook_url: Type.Optional(Type.String({ description: 'Only when a token was just issued: the token is stored hashed' })),
    webhook_token: Type.Optional(Type.String({ description: 'Only when a token was just issued' })),
  },
  { title: 'Routine' },
);
export type Routine = Static<typeof Routine>;

export const ExecutionStatus = Type.Union(
  [Type.Literal('pending'), Type.Literal('running'), Type.Literal('success'), Type.Literal('failed')],
  { description: 'pending until the agent receives it, running until it acknowledges (success) or fails' },
);

export const Execution = Type.Object(
  {
    id: Type.String(),
    routine_id: Type.String(),
    status: ExecutionStatus,
    trigger: Type.Union([Type.Literal('cron'), Type.Literal('webhook'), Type.Literal('manual')]),
    payload: Type.Unknown({ description: 'The payload the agent received' }),
    scheduled_for: Type.Union([Timestamp, Type.Null()], { description: 'The cron slot (cron executions)' }),
    message_id: Type.Union([Type.String(), Type.Null()]),
    output: Type.Unknown({
      description:
        "The agent's acknowledge output as it sent it (any JSON: an object stays an object), or why it failed (a string); null until it finishes",
    }),
    created_at: Timestamp,
    started_at: NullableTimestamp,
    completed_at: NullableTimestamp,
  },
  { title: 'RoutineExecution' },
);
export type Execution = Static<typeof Execution>;

export const Fire = Type.Object(
  {
    id: Type.String(),
    routine_id: Type.String(),
    scheduled_for: Timestamp,
    outcome: Type.Union([Type.Literal('fired'), Type.Literal('skipped')]),
    reason: Type.Union([Type.String(), Type.Null()]),
    execution_id: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
  },
  { title: 'RoutineFire' },
);
export type Fire = Static<typeof Fire>;

export const ListRoutinesQuery = Type.Composite([
  PageQuery,
  Type.Object({
    trigger_type: Type.Optional(TriggerType),
    enabled: Type.Optional(Type.Boolean()),
    last_status: Type.Optional(
      Type.Intersect([ExecutionStatus], { description: 'Only routines whose latest execution has this status (failed: failing routines)' }),
    ),
  }),
]);

export const ListExecutionsQuery = Type.Composite([PageQuery, Type.Object({ status: Type.Optional(ExecutionStatus) })]);

export const PreviewQuery = Type.Object({
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
});

export const TriggerBody = Type.Union([
  Type.Object(
    { payload: Type.Optional(Type.Unknown({ description: "Replaces the routine's payload for this run" })), reason: Type.Optional(Reason) },
    { additionalProperties: false },
  ),
  Type.Null(),
]);

export const RoutineParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) });
export const WebhookFired = Type.Object(
  {
    execution_id: Type.Union([Type.String(), Type.Null()], {
      description: "null: the routine debounces; its execution starts when the burst of calls ends, with the last call's body",
    }),
  },
  { title: 'RoutineWebhookFired' },
);
export const WebhookToken = Type.Object({ webhook_url: Type.String(), webhook_token: Type.String() }, { title: 'RoutineWebhookToken' });
