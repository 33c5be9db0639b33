import { DebounceConfig } from '../debounce/schemas.js';
import { Type } from '@sinclair/typebox';
import { JsonObject, NullableTimestamp, PageQuery, Timestamp } from '../http/schemas.js';

/** Triggers, their fires and webhook calls. */

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
    debounce: Type.Optional(Type.Intersect([DebounceConfig], { description: 'event and webhook triggers only' })),
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
export const HookStarted = Type.Object(
  {
    run_id: Type.Union([Type.String(), Type.Null()], {
      description: "null: the trigger debounces; its run starts when the burst of calls ends, with the last call's input",
    }),
  },
  { title: 'HookStarted' },
);
