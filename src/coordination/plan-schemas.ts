import { Type, type Static } from '@sinclair/typebox';
import { AgentId, JsonObject, NullableBudgetPause, Timestamp } from '../http/schemas.js';
import { STRATEGIES } from '../discovery/routing.js';
import { STEP_TYPES } from './plan-definition.js';

/** Plans and their steps, and the planner's drafts; runs and approvals are schemas.ts, triggers trigger-schemas.ts. */

const StepId = Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'Step id: letters, digits, _ and -, unique in the plan' });
const StepIds = Type.Array(StepId, { maxItems: 200 });
const Template = (description: string) => Type.Unknown({ description });
const ChannelId = Type.String({ pattern: '^ntc_[A-Za-z0-9_-]{1,60}$', description: 'A notification channel id (ntc_…)' });
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
  notify: Type.Optional(
    Type.Array(ChannelId, {
      maxItems: 20,
      description:
        'human_approval, human_input: notification channels told when the step starts waiting (with its approval link), reminded, and decided (by whom)',
    }),
  ),
  remind_after_s: Type.Optional(
    Seconds('human_approval, human_input: tell the notify channels once more if still undecided after this long'),
  ),
  escalate_after_s: Type.Optional(Seconds('human_approval, human_input: escalate to escalate_to if still undecided after this long')),
  escalate_to: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
      maxItems: 20,
      description:
        "human_approval, human_input: on escalation, notification channels (ntc_…) told, and approvers ('user:', 'role:', 'agent:' entries; human_approval only) added to a step that names approvers",
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
export const RunPriority = Type.Integer({ minimum: 0, maximum: 9, description: '0–9, higher first out of the queue (default 4)' });
const LimitKey = Type.String({
  minLength: 1,
  maxLength: 500,
  description: "A template over the run's input ({{input.customer}}): the limit counts each value apart",
});
const ConcurrencyLimit = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 10_000, description: 'Active (running or waiting) runs of the plan at most' }),
    key: Type.Optional(LimitKey),
    on_limit: Type.Optional(
      Type.Union([Type.Literal('queue'), Type.Literal('cancel_new'), Type.Literal('cancel_oldest')], {
        description:
          'A start over the limit: queue it until a slot frees (default), cancel it, or cancel the oldest active run and start it',
      }),
    ),
  },
  { additionalProperties: false, description: 'Runs over the limit are queued (status queued, blocked_by concurrency)' },
);
const RateLimit = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100_000, description: 'Runs that start per period at most' }),
    period_s: Type.Integer({ minimum: 1, maximum: 86_400 }),
    key: Type.Optional(LimitKey),
  },
  { additionalProperties: false, description: 'Runs over the rate are queued (blocked_by rate_limit) until the window lets them start' },
);
const Limits = {
  concurrency: Type.Optional(ConcurrencyLimit),
  rate_limit: Type.Optional(RateLimit),
  priority: Type.Optional(RunPriority),
};

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
    ...Limits,
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
    ...Limits,
    version: Type.Integer({ description: '1 on create, +1 on every update' }),
    paused: NullableBudgetPause("A budget paused the plan: its runs' agent steps wait until it resumes"),
    created_by: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Plan' },
);

export const PlanParams = Type.Object({ plan_id: Type.String({ minLength: 1, maxLength: 200, description: 'Plan id or alias' }) });
export const VersionParams = Type.Object({ plan_id: PlanParams.properties.plan_id, version: Type.Integer({ minimum: 1 }) });

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
