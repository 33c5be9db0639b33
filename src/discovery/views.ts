import type { Static } from '@sinclair/typebox';
import { iso } from '../kernel/clock.js';
import type { BudgetPause, PausedScopes } from '../kernel/usage-ports.js';
import type { AgentEntry as AgentEntrySchema } from './schemas.js';
import { healthOf, type Health } from './routing.js';
import type { HeartbeatRow } from './heartbeats-store.js';
import type { CapabilityFilter, CapabilityRow } from './store.js';

/** What callers see of the directory: capabilities, health, lookup entries and group members. */
export interface Capability {
  id: string;
  agent_id: string;
  capability: string;
  metadata: Record<string, unknown>;
  groups: string[];
  max_concurrency: number | null;
  paused: BudgetPause | null;
  created_at: string;
  updated_at: string;
}

export interface HealthRecord {
  agent_id: string;
  status: Health;
  load: number | null;
  last_heartbeat: string | null;
  uptime_seconds: number;
  ttl_seconds: number;
  metadata: Record<string, unknown>;
}

export type AgentEntry = Static<typeof AgentEntrySchema>;

export interface GroupMember {
  agent_id: string;
  capabilities: string[];
  health: Health;
  load: number | null;
  last_heartbeat: string | null;
}

export interface LookupInput {
  capability?: string;
  strategy?: string;
  group?: string;
  limit?: number;
  offset?: number;
  include_unhealthy?: boolean;
  /** Also agents a budget paused (left out otherwise). */
  include_paused?: boolean;
}

export type Metadata = Record<string, unknown>;

export function parseObject(text: string): Metadata {
  return JSON.parse(text) as Metadata;
}

/** `pauses`: what budgets pause now (null: budgets are not bound, nothing is paused). */
export function toCapability(row: CapabilityRow, pauses: PausedScopes | null): Capability {
  return {
    id: row.id,
    agent_id: row.agent_id,
    capability: row.capability,
    metadata: parseObject(row.metadata),
    groups: JSON.parse(row.groups) as string[],
    max_concurrency: row.max_concurrency,
    paused: pauses?.pauseOf('capability', row.capability) ?? null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** `text.*` → prefix `text.`; `*` → everything; otherwise an exact name. */
export function capabilityFilter(capability: string | undefined): Pick<CapabilityFilter, 'exact' | 'prefix'> {
  if (capability === undefined || capability === '*') return {};
  if (capability.endsWith('.*')) return { prefix: capability.slice(0, -1) };
  return { exact: capability };
}

/** An agent's health as its last heartbeat (or none) makes it at `now`. */
export function healthView(agentId: string, row: HeartbeatRow | undefined, now: number, ttlMs: number): HealthRecord {
  const status = healthOf(row?.last_heartbeat_at ?? null, row?.load ?? null, now, ttlMs);
  const alive = status === 'healthy' || status === 'degraded';
  return {
    agent_id: agentId,
    status,
    load: row?.load ?? null,
    last_heartbeat: iso(row?.last_heartbeat_at ?? null),
    uptime_seconds: alive && row ? Math.max(0, Math.floor((now - row.started_at) / 1000)) : 0,
    ttl_seconds: ttlMs / 1000,
    metadata: row ? parseObject(row.metadata) : {},
  };
}
