import { Type, type Static } from '@sinclair/typebox';
import { AgentId, BudgetPause, PageQuery, Timestamp } from '../http/schemas.js';

/**
 * The usage domain's schemas, written once: they validate requests (the acknowledge's `usage`
 * too), type the service and the SDKs, and document the OpenAPI.
 */

/** Most tokens one report may carry per kind: far above any model's context, below float precision. */
export const MAX_TOKENS = 1_000_000_000;
/** Most one report may cost. */
export const MAX_COST_USD = 1_000_000;

const Tokens = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_TOKENS, description });
const Name = (description: string) => Type.String({ minLength: 1, maxLength: 200, description });
const Id = (description: string) => Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.:-]+$', description });

export const UsageReport = Type.Object(
  {
    model: Name('The model called (`gpt-4.1`, `claude-sonnet-4`…)'),
    provider: Type.Optional(Name('Who served it (`openai`, `anthropic`…)')),
    input_tokens: Tokens('Prompt tokens'),
    output_tokens: Tokens('Completion tokens'),
    cached_tokens: Type.Optional(Tokens('Prompt tokens served from a cache (part of input_tokens)')),
    cost_usd: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_COST_USD, description: 'What the call cost, in US dollars' })),
  },
  { additionalProperties: false, title: 'UsageReport', description: 'What the work consumed: tokens of one model, and what it cost' },
);
export type UsageReport = Static<typeof UsageReport>;

export const RecordUsageBody = Type.Composite(
  [
    UsageReport,
    Type.Object({
      agent_id: AgentId,
      run_id: Type.Optional(Id('The run the usage belongs to')),
      step_id: Type.Optional(Id('The step of that run (needs run_id)')),
    }),
  ],
  { additionalProperties: false },
);
export type RecordUsageBody = Static<typeof RecordUsageBody>;

export const UsageRecord = Type.Object(
  {
    id: Type.String(),
    agent_id: Type.String(),
    model: Type.String(),
    provider: Type.Union([Type.String(), Type.Null()]),
    input_tokens: Type.Integer(),
    output_tokens: Type.Integer(),
    cached_tokens: Type.Integer(),
    cost_usd: Type.Number(),
    message_id: Type.Union([Type.String(), Type.Null()]),
    run_id: Type.Union([Type.String(), Type.Null()]),
    step_id: Type.Union([Type.String(), Type.Null()]),
    plan_id: Type.Union([Type.String(), Type.Null()]),
    capability: Type.Union([Type.String(), Type.Null()]),
    recorded_at: Timestamp,
  },
  { title: 'UsageRecord' },
);
export type UsageRecord = Static<typeof UsageRecord>;

export const GROUPINGS = ['agent', 'capability', 'plan', 'run', 'model', 'day'] as const;
export type Grouping = (typeof GROUPINGS)[number];

export const UsageQuery = Type.Object(
  {
    group_by: Type.Union(
      GROUPINGS.map((name) => Type.Literal(name)),
      { description: 'What the rows total by; `day` is the UTC day (YYYY-MM-DD)' },
    ),
    agent_id: Type.Optional(AgentId),
    plan_id: Type.Optional(Id('Only usage of runs of this plan')),
    run_id: Type.Optional(Id('Only usage of this run')),
    model: Type.Optional(Name('Only usage of this model')),
    after: Type.Optional(Type.String({ format: 'date-time', description: 'From this time (rounded down to its hour)' })),
    before: Type.Optional(Type.String({ format: 'date-time', description: 'Until this time (exclusive; rounded up to an hour)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Most rows, the costliest first' })),
  },
  { additionalProperties: false },
);
export type UsageQuery = Static<typeof UsageQuery>;

export const UsageTotal = Type.Object(
  {
    key: Type.Union([Type.String(), Type.Null()], { description: 'The group (agent id, model, day…); null: usage outside any' }),
    count: Type.Integer({ description: 'Reports summed' }),
    input_tokens: Type.Integer(),
    output_tokens: Type.Integer(),
    cached_tokens: Type.Integer(),
    cost_usd: Type.Number(),
  },
  { title: 'UsageTotal' },
);
export type UsageTotal = Static<typeof UsageTotal>;

export const UsageTotals = Type.Object({ group_by: Type.String(), rows: Type.Array(UsageTotal) }, { title: 'UsageTotals' });
export type UsageTotals = Static<typeof UsageTotals>;

const Limits = Type.Object(
  {
    cost_usd: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 1e9, description: 'Most the scope may spend per period, in US dollars' }),
    ),
    tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1e15, description: 'Most tokens (input + output) per period' })),
  },
  { additionalProperties: false, minProperties: 1 },
);
const WarnAt = Type.Number({
  exclusiveMinimum: 0,
  exclusiveMaximum: 1,
  description: 'Fraction of a limit whose crossing appends budget.warning',
});
const Action = Type.Union([Type.Literal('warn'), Type.Literal('pause')], {
  description:
    "What crossing a limit does besides budget.exceeded: 'pause' pauses the scope until the period ends, the limit is raised or a resume. " +
    'An agent (every agent, for a global budget) has its inbox held and is left out of lookups; a capability is left out of lookups; ' +
    'plan steps for a paused agent, capability or plan wait (blocked_by budget)',
});

export const CreateBudgetBody = Type.Object(
  {
    name: Type.Optional(Name('A label')),
    agent_id: Type.Optional(AgentId),
    capability: Type.Optional(Name('Usage of steps for this capability')),
    plan_id: Type.Optional(Id('Usage of runs of this plan')),
    period: Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month'), Type.Literal('total')]),
    time_zone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'UTC', description: 'IANA zone the periods start in' })),
    limits: Limits,
    warn_at: Type.Optional(WarnAt),
    action: Action,
  },
  { additionalProperties: false, description: 'A budget: one scope (agent_id, capability or plan_id; none: everything)' },
);
export type CreateBudgetBody = Static<typeof CreateBudgetBody>;

export const UpdateBudgetBody = Type.Object(
  {
    name: Type.Optional(Name('A label')),
    limits: Type.Optional(Limits),
    warn_at: Type.Optional(Type.Union([WarnAt, Type.Null()])),
    action: Type.Optional(Action),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateBudgetBody = Static<typeof UpdateBudgetBody>;

export const BudgetListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    state: Type.Optional(
      Type.Literal('paused', { description: 'Only the budgets pausing their scope now: what is paused, in one short read' }),
    ),
  }),
]);
export type BudgetListQuery = Static<typeof BudgetListQuery>;

export const BudgetParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

const BudgetScope = Type.Object({
  kind: Type.Union([Type.Literal('agent'), Type.Literal('capability'), Type.Literal('plan'), Type.Literal('global')]),
  value: Type.Union([Type.String(), Type.Null()], { description: 'The agent id, capability or plan id; null for global' }),
});

export const Budget = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    scope: BudgetScope,
    period: Type.String(),
    time_zone: Type.String(),
    limits: Type.Object({ cost_usd: Type.Union([Type.Number(), Type.Null()]), tokens: Type.Union([Type.Integer(), Type.Null()]) }),
    warn_at: Type.Union([Type.Number(), Type.Null()]),
    action: Type.String(),
    period_start: Timestamp,
    period_end: Type.Union([Timestamp, Type.Null()], { description: 'null for a total budget' }),
    spent: Type.Object({ cost_usd: Type.Number(), tokens: Type.Integer() }, { description: 'In the current period' }),
    state: Type.Union([Type.Literal('ok'), Type.Literal('warning'), Type.Literal('exceeded'), Type.Literal('paused')]),
    created_by: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Budget' },
);
export type Budget = Static<typeof Budget>;

export const ScopePause = Type.Composite([Type.Object({ scope: BudgetScope }), BudgetPause], { title: 'ScopePause' });
export type ScopePause = Static<typeof ScopePause>;
