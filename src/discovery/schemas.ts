import { Type, type Static } from '@sinclair/typebox';
import { AgentId, JsonObject, Meta, NullableBudgetPause, NullableTimestamp, PageQuery, Timestamp } from '../http/schemas.js';
import { STRATEGIES } from './routing.js';

/** Dotted lowercase names: `text.summarize`, `image.detect-faces`, `code.v2.review`. */
export const CAPABILITY_PATTERN = '^[a-z0-9][a-z0-9_-]*(\\.[a-z0-9][a-z0-9_-]*)*$';
/** A lookup filter: a name, or a name prefix ending in `.*` (`text.*`), or `*` for all. */
export const CAPABILITY_FILTER_PATTERN = '^(\\*|[a-z0-9][a-z0-9_-]*(\\.[a-z0-9][a-z0-9_-]*)*(\\.\\*)?)$';
export const GROUP_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$';

const CapabilityName = Type.String({
  pattern: CAPABILITY_PATTERN,
  maxLength: 200,
  description: 'Dotted lowercase name, e.g. text.summarize',
});
const CapabilityFilter = Type.String({
  pattern: CAPABILITY_FILTER_PATTERN,
  maxLength: 200,
  description: 'A capability name, or a prefix with a trailing wildcard (text.*)',
});
const GroupName = Type.String({ pattern: GROUP_PATTERN, description: 'Group name' });

export const StrategyName = Type.Union(
  STRATEGIES.map((s) => Type.Literal(s)),
  { description: 'How the agents are ordered' },
);

/** Free-form, with the keys routing and search read checked when present. */
export const CapabilityMetadata = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 4000, description: 'What the capability does (searched)' })),
    tags: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 50, description: 'Searched' })),
    examples: Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 50, description: 'Example requests (searched)' })),
    weight: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1_000_000, description: 'Relative share under the weighted strategy (default 1)' }),
    ),
    latency_ms: Type.Optional(Type.Number({ minimum: 0, description: 'Claimed latency; used by the latency strategy until measured' })),
    trust_score: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: 'Claimed trust; used by the trust strategy until measured' }),
    ),
    cost_usd: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1_000_000, description: 'Claimed cost per call; used by the cost strategy until measured' }),
    ),
  },
  { additionalProperties: true, description: 'Free-form JSON object' },
);

const MaxConcurrency = Type.Integer({
  minimum: 1,
  maximum: 10_000,
  description:
    "The agent holds at most this many messages leased at once, across all its receivers and channels (the smallest of its capabilities' applies)",
});

export const RegisterBody = Type.Object(
  {
    agent_id: Type.Optional(AgentId),
    capability: CapabilityName,
    metadata: Type.Optional(CapabilityMetadata),
    groups: Type.Optional(Type.Array(GroupName, { maxItems: 50, uniqueItems: true })),
    max_concurrency: Type.Optional(MaxConcurrency),
  },
  { additionalProperties: false },
);
export type RegisterBody = Static<typeof RegisterBody>;

export const Capability = Type.Object(
  {
    id: Type.String(),
    agent_id: Type.String(),
    capability: Type.String(),
    metadata: JsonObject,
    groups: Type.Array(Type.String()),
    max_concurrency: Type.Union([MaxConcurrency, Type.Null()]),
    paused: NullableBudgetPause(
      "A budget paused the capability (every agent's): plan steps naming it wait and lookups leave its agents out until it resumes",
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Capability' },
);

export const ListCapabilitiesQuery = Type.Composite([
  PageQuery,
  Type.Object({
    agent_id: Type.Optional(AgentId),
    capability: Type.Optional(CapabilityFilter),
    group: Type.Optional(GroupName),
  }),
]);

export const CapabilityParams = Type.Object({ capability_id: Type.String({ minLength: 1, maxLength: 100 }) });
export const AgentParams = Type.Object({ agent_id: AgentId });
export const GroupParams = Type.Object({ group_name: GroupName });

export const AgentDeleted = Type.Object(
  {
    id: Type.String({ description: 'The agent id' }),
    deleted: Type.Literal(true),
    capabilities_removed: Type.Integer(),
  },
  { title: 'AgentDeleted' },
);

export const HeartbeatBody = Type.Object(
  {
    agent_id: Type.Optional(AgentId),
    load: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'Current load, 0 (idle) to 1 (saturated)' })),
    metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);
export type HeartbeatBody = Static<typeof HeartbeatBody>;

export const HealthStatus = Type.Union(['healthy', 'degraded', 'unhealthy', 'unknown'].map((s) => Type.Literal(s)));

export const HealthRecord = Type.Object(
  {
    agent_id: Type.String(),
    status: HealthStatus,
    load: Type.Union([Type.Number(), Type.Null()]),
    last_heartbeat: NullableTimestamp,
    uptime_seconds: Type.Integer({ description: 'Seconds since heartbeats began without a gap longer than the TTL; 0 unless alive' }),
    ttl_seconds: Type.Integer(),
    metadata: JsonObject,
  },
  { title: 'AgentHealth' },
);

export const LookupQuery = Type.Object({
  capability: Type.Optional(CapabilityFilter),
  strategy: Type.Optional(StrategyName),
  group: Type.Optional(GroupName),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  offset: Type.Optional(
    Type.Integer({
      minimum: 0,
      default: 0,
      description:
        'Agents to skip in the order of the strategy (a page of the list); the round_robin, random and weighted orders change from call to call',
    }),
  ),
  include_unhealthy: Type.Optional(Type.Boolean({ default: false })),
  include_paused: Type.Optional(Type.Boolean({ default: false, description: 'Also agents a budget paused' })),
});
export type LookupQuery = Static<typeof LookupQuery>;

export const AgentEntry = Type.Object(
  {
    agent_id: Type.String(),
    capability: Type.String(),
    capability_id: Type.String(),
    metadata: JsonObject,
    groups: Type.Array(Type.String()),
    load: Type.Union([Type.Number(), Type.Null()]),
    health: HealthStatus,
    last_heartbeat: NullableTimestamp,
    paused: Type.Boolean({ description: 'A budget paused the agent: its inbox holds its messages (listed only with include_paused)' }),
    latency_ms: Type.Optional(Type.Union([Type.Number(), Type.Null()], { description: 'latency strategy: the figure used' })),
    trust_score: Type.Optional(Type.Union([Type.Number(), Type.Null()], { description: 'trust strategy: the figure used' })),
    cost_usd: Type.Optional(
      Type.Union([Type.Number(), Type.Null()], {
        description:
          "cost strategy: the figure used, the agent's mean cost per call over 7 days (for this capability when it reported usage of its steps)",
      }),
    ),
    observed: Type.Optional(
      Type.Object(
        {
          success_ratio: Type.Union([Type.Number(), Type.Null()], {
            description:
              'Acknowledged ÷ settled, over its last 100 settled deliveries of plan steps for this capability when it has some (of_capability), else of all its messages',
          }),
          latency_ms: Type.Union([Type.Number(), Type.Null()], {
            description: 'Median ms from delivery to acknowledgement, over the same',
          }),
          deliveries: Type.Integer({ description: 'Settled deliveries those figures are of (≤ 100)' }),
          of_capability: Type.Boolean({ description: 'success_ratio, latency_ms and deliveries are of this capability' }),
          cost_usd: Type.Union([Type.Number(), Type.Null()], {
            description: 'Mean cost per call over 7 days (of steps for this capability when it reported them)',
          }),
          calls: Type.Integer({ description: 'Calls with usage that mean is of' }),
        },
        { description: 'HTTP lookups: what the platform measured of the agent (nulls: nothing yet)' },
      ),
    ),
    score_source: Type.Optional(
      Type.Union([Type.Literal('measured'), Type.Literal('metadata'), Type.Literal('none')], {
        description: 'latency/trust/cost strategies: measured by the platform, claimed in metadata, or neither',
      }),
    ),
  },
  { title: 'Agent' },
);

export const LookupEnvelope = Type.Object({
  data: Type.Object({ agents: Type.Array(AgentEntry) }, { title: 'AgentLookup' }),
  meta: Type.Object({
    request_id: Type.String(),
    strategy: StrategyName,
    total: Type.Integer({ description: 'Agents that matched, before the offset and limit' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  }),
});

export const SearchBody = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 2000, description: 'Natural language' }),
    top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
    min_score: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: 0 })),
  },
  { additionalProperties: false },
);
export type SearchBody = Static<typeof SearchBody>;

export const SearchResult = Type.Object(
  {
    capability: Type.Object({
      id: Type.String(),
      name: Type.String(),
      agent_id: Type.String(),
      metadata: JsonObject,
      groups: Type.Array(Type.String()),
    }),
    similarity_score: Type.Number({ minimum: 0, maximum: 1 }),
  },
  { title: 'CapabilityMatch' },
);

export const SearchEnvelope = Type.Object({
  data: Type.Object({ results: Type.Array(SearchResult) }, { title: 'CapabilitySearch' }),
  meta: Type.Composite([
    Meta,
    Type.Object({
      ranker: Type.Union([Type.Literal('lexical'), Type.Literal('lexical+embeddings')], {
        description: 'lexical+embeddings when the embeddings endpoint answered for this query',
      }),
    }),
  ]),
});

export const Group = Type.Object(
  {
    name: Type.String(),
    agent_count: Type.Integer(),
    capability_count: Type.Integer(),
  },
  { title: 'AgentGroup' },
);

export const GroupMember = Type.Object(
  {
    agent_id: Type.String(),
    capabilities: Type.Array(Type.String(), { description: 'Its capabilities in this group' }),
    health: HealthStatus,
    load: Type.Union([Type.Number(), Type.Null()]),
    last_heartbeat: NullableTimestamp,
  },
  { title: 'AgentGroupMember' },
);
