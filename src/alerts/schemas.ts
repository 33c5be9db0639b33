import { Type, type Static } from '@sinclair/typebox';
import { AgentId, NullableTimestamp, PageQuery, Timestamp } from '../http/schemas.js';

/**
 * The alerts domain's schemas, written once: they validate requests, type the service and the
 * SDK, and document the OpenAPI. The conditions are a closed set, each evaluated by one grouped
 * query per pass (signals-store.ts, or the usage domain's budget readings for `budget`).
 */

const DAY_S = 86_400;
/** Most channels one rule tells. */
export const MAX_RULE_CHANNELS = 10;

const Id = (description: string) => Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.:-]+$', description });
const Threshold = (description: string) => Type.Integer({ minimum: 1, maximum: 1_000_000, description });
const Seconds = (minimum: number, maximum: number, description: string) => Type.Integer({ minimum, maximum, description });

export const EventCountCondition = Type.Object(
  {
    type: Type.Literal('event_count'),
    event_type: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: '^(\\*|[a-z_]+(\\.[a-z_]+)*(\\.\\*)?)$',
      description: 'An event type (`run.failed`), a prefix pattern (`run.*`) or `*`; it must match a type of the event log',
    }),
    subject: Type.Optional(Id('Only events about this subject (a run, task, agent id…)')),
    plan_id: Type.Optional(Id('Only events of runs of this plan')),
    window_s: Seconds(10, 7 * DAY_S, 'Counted over the last window_s seconds'),
    threshold: Threshold('Fires when at least this many match'),
  },
  { additionalProperties: false, description: 'event_count: matching events in the window ≥ threshold' },
);
export const InboxDepthCondition = Type.Object(
  {
    type: Type.Literal('inbox_depth'),
    agent_id: Type.Optional(AgentId),
    threshold: Threshold('Fires when this many messages (or more) wait in one inbox'),
  },
  { additionalProperties: false, description: "inbox_depth: an inbox's waiting messages ≥ threshold (this agent's, or any agent's)" },
);
export const InboxAgeCondition = Type.Object(
  {
    type: Type.Literal('inbox_age'),
    agent_id: Type.Optional(AgentId),
    older_than_s: Seconds(1, 30 * DAY_S, 'Fires when the oldest waiting message is at least this old'),
  },
  {
    additionalProperties: false,
    description: "inbox_age: an inbox's oldest waiting message ≥ older_than_s (this agent's, or any agent's)",
  },
);
export const DeadLettersCondition = Type.Object(
  {
    type: Type.Literal('dead_letters'),
    agent_id: Type.Optional(AgentId),
    threshold: Threshold('Fires when this many dead letters (or more) are kept'),
  },
  { additionalProperties: false, description: "dead_letters: dead letters not redriven ≥ threshold (this agent's, or all)" },
);
export const AgentUnhealthyCondition = Type.Object(
  {
    type: Type.Literal('agent_unhealthy'),
    agent_id: Type.Optional(AgentId),
    capability: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Any agent offering this capability' })),
    for_s: Seconds(0, 30 * DAY_S, 'Fires when an agent has been unhealthy (no heartbeat within the health TTL) this long'),
  },
  {
    additionalProperties: false,
    description: 'agent_unhealthy: this agent, an agent of this capability, or (neither given) any agent, unhealthy for for_s',
  },
);
export const ApprovalWaitingCondition = Type.Object(
  {
    type: Type.Literal('approval_waiting'),
    plan_id: Type.Optional(Id('Only runs of this plan')),
    older_than_s: Seconds(1, 30 * DAY_S, 'Fires when a human step has waited at least this long'),
  },
  { additionalProperties: false, description: 'approval_waiting: a human step (approval or input) waiting ≥ older_than_s' },
);
export const RoutineFailuresCondition = Type.Object(
  {
    type: Type.Literal('routine_failures'),
    routine_id: Type.Optional(Id('This routine; any routine when absent')),
    threshold: Threshold('Fires after this many failed executions in a row'),
  },
  { additionalProperties: false, description: 'routine_failures: consecutive failed executions of a routine ≥ threshold' },
);

export const BudgetCondition = Type.Object(
  {
    type: Type.Literal('budget'),
    budget_id: Type.Optional(Id('This budget (bgt_…); any budget when absent')),
    fraction: Type.Optional(
      Type.Number({
        minimum: 0.01,
        maximum: 10,
        default: 1,
        description: 'Fires when consumption reaches this fraction of the limit (1: the limit itself)',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: "budget: a budget's consumption in its current period ≥ fraction of its limit (the larger of cost and tokens)",
  },
);

export const Condition = Type.Union(
  [
    EventCountCondition,
    InboxDepthCondition,
    InboxAgeCondition,
    DeadLettersCondition,
    AgentUnhealthyCondition,
    ApprovalWaitingCondition,
    RoutineFailuresCondition,
    BudgetCondition,
  ],
  { description: 'What the rule watches: one of a closed set of conditions, by `type`' },
);
export type Condition = Static<typeof Condition>;
export type ConditionType = Condition['type'];
export const CONDITION_TYPES: readonly ConditionType[] = [
  'event_count',
  'inbox_depth',
  'inbox_age',
  'dead_letters',
  'agent_unhealthy',
  'approval_waiting',
  'routine_failures',
  'budget',
];

export const Severity = Type.Union([Type.Literal('info'), Type.Literal('warning'), Type.Literal('critical')], {
  description: 'How much its alerts matter; channels show it',
});
const Name = Type.String({ minLength: 1, maxLength: 200, description: 'What the rule watches, for people' });
const Channels = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: MAX_RULE_CHANNELS,
  uniqueItems: true,
  description: 'Notification channel ids (ntc_…) told when an alert fires and resolves',
});
const RepeatInterval = Type.Integer({
  minimum: 0,
  maximum: 7 * DAY_S,
  description: 'While firing and not acknowledged, notify again this often (seconds); 0: once per transition',
});
const SilencedUntil = Type.Union([Timestamp, Type.Null()], {
  description: 'No notifications before this time (alerts still fire, resolve and are logged); null: not silenced',
});

export const CreateRuleBody = Type.Object(
  {
    name: Name,
    condition: Condition,
    severity: Type.Optional(Severity),
    channels: Channels,
    repeat_interval_s: Type.Optional(RepeatInterval),
    enabled: Type.Optional(Type.Boolean({ default: true })),
    silenced_until: Type.Optional(SilencedUntil),
  },
  { additionalProperties: false },
);
export type CreateRuleBody = Static<typeof CreateRuleBody>;

export const UpdateRuleBody = Type.Object(
  {
    name: Type.Optional(Name),
    condition: Type.Optional(Condition),
    severity: Type.Optional(Severity),
    channels: Type.Optional(Channels),
    repeat_interval_s: Type.Optional(RepeatInterval),
    enabled: Type.Optional(Type.Boolean()),
    silenced_until: Type.Optional(SilencedUntil),
  },
  { additionalProperties: false, description: 'The fields to change (condition whole); the others keep their value' },
);
export type UpdateRuleBody = Static<typeof UpdateRuleBody>;

export const Rule = Type.Object(
  {
    id: Type.String({ description: 'Rule id (alr_…)' }),
    name: Type.String(),
    condition: Condition,
    severity: Severity,
    channels: Type.Array(Type.String()),
    repeat_interval_s: Type.Integer(),
    enabled: Type.Boolean(),
    silenced_until: NullableTimestamp,
    created_by: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'AlertRule' },
);
export type Rule = Static<typeof Rule>;

export const AlertState = Type.Union([Type.Literal('firing'), Type.Literal('resolved')]);
export type AlertState = Static<typeof AlertState>;

export const Alert = Type.Object(
  {
    id: Type.String({ description: 'Alert id (alt_…)' }),
    rule_id: Type.String(),
    rule_name: Type.String(),
    state: AlertState,
    severity: Severity,
    value: Type.Number({ description: 'What the condition measured when it fired (a count, or seconds)' }),
    detail: Type.Union([Type.String(), Type.Null()], { description: 'What it is about (an agent, routine, plan…), when known' }),
    since: Timestamp,
    resolved_at: NullableTimestamp,
    acknowledged_at: NullableTimestamp,
    acknowledged_by: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'Alert' },
);
export type Alert = Static<typeof Alert>;

export const ListAlertsQuery = Type.Composite([
  PageQuery,
  Type.Object({
    state: Type.Optional(AlertState),
    rule_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'Only alerts that fired at or after this time' })),
  }),
]);
export type ListAlertsQuery = Static<typeof ListAlertsQuery>;

export const RuleParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const ListRulesQuery = PageQuery;

export const PreviewBody = Type.Object({ condition: Condition }, { additionalProperties: false });
export type PreviewBody = Static<typeof PreviewBody>;

export const Preview = Type.Object(
  {
    holds: Type.Boolean({ description: 'Whether the condition holds now: a rule on it would fire' }),
    value: Type.Number({ description: 'What it measures now (a count, or seconds); 0 when there is nothing to measure' }),
    detail: Type.Union([Type.String(), Type.Null()], { description: 'What it is about (an agent, routine, steps…), when known' }),
    summary: Type.String({ description: 'The measure in words, as a notification would say it' }),
    measured_at: Timestamp,
    covers: Type.Union([Type.Literal('last_hour'), Type.Literal('now')], {
      description:
        '`last_hour` (event_count, whose windows can be counted again from the event log) or `now` (the other types keep no history: their current measure only)',
    }),
    history: Type.Union(
      [
        Type.Array(
          Type.Object({
            at: Timestamp,
            value: Type.Integer({ description: 'Matching events in the window ending at `at`' }),
            holds: Type.Boolean(),
          }),
        ),
        Type.Null(),
      ],
      {
        description:
          'event_count: 12 windows ending every 5 minutes over the last hour, oldest first (the last ends now); null for the other types',
      },
    ),
  },
  { title: 'AlertRulePreview' },
);
export type Preview = Static<typeof Preview>;
