import { autocommit, type Tx } from '../kernel/tx.js';
import type { Logger } from 'pino';
import { assertActsAs, type Principal } from '../auth/index.js';
import { iso, type Clock } from '../kernel/clock.js';
import { InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import {
  SYSTEM_ACTOR,
  type AgentDirectory,
  type AgentLimits,
  type AuditTrail,
  type DeliveryStats,
  type EventLog,
  type NewEvent,
} from '../kernel/ports.js';
import { type AgentPauses, type PausedScopes } from '../kernel/usage-ports.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { Embedder } from './embeddings.js';
import { CapabilitySearch, type SearchInput } from './capability-search.js';
import type { SearchHit } from './search.js';
import { DEFAULT_STRATEGY, DEGRADED_LOAD, healthOf, route, STRATEGIES, type Candidate, type Strategy } from './routing.js';
import type { GroupCount } from './groups-store.js';
import type { CandidateRow, DiscoveryStore } from './store.js';
import { finite, isScored, RoutingScores } from './routing-scores.js';
import {
  capabilityFilter,
  healthView,
  parseObject,
  toCapability,
  type AgentEntry,
  type Capability,
  type GroupMember,
  type HealthRecord,
  type LookupInput,
  type Metadata,
} from './views.js';

/** Published after capabilities change; every node then brings its search index up to date. */
export const DISCOVERY_CHANGED = 'discovery:changed';

const MAX_METADATA_BYTES = 64 * 1024;
/** How long an agent's concurrency limit is trusted before it is read again (a change applies within it). */
const LIMIT_TTL_MS = 1000;

export interface DiscoveryDeps {
  store: DiscoveryStore;
  clock: Clock;
  notifier: Notifier;
  logger: Logger;
  healthTtlSeconds: number;
  /** agent.registered, agent.deregistered, agent.health_changed. */
  events: EventLog;
  audit: AuditTrail;
  /** Measured delivery figures (messaging); without them latency/trust use the claimed metadata. */
  stats?: DeliveryStats;
  /** Embeddings endpoint for the search blend; lexical only without it. */
  embedder?: Embedder | null;
  /** Uniform in [0, 1), for the random and weighted strategies. */
  random?: () => number;
}

/** The answer's field for the figure a scored strategy ordered by. */
const SCORE_FIELD = { latency: 'latency_ms', trust: 'trust_score', cost: 'cost_usd' } as const;

/**
 * The directory of agents: capabilities, heartbeats and health, lookups by routing strategy,
 * and groups; search is CapabilitySearch's (capability-search.ts), reached through here.
 * Implements the AgentDirectory port for other domains. The groups agents declare here route
 * and find agents only; what a share with a group opens is decided by the memberships an
 * admin grants (auth/groups).
 */
export class DiscoveryService implements AgentDirectory, AgentLimits {
  private readonly store: DiscoveryStore;
  private readonly clock: Clock;
  private readonly notifier: Notifier;
  private readonly logger: Logger;
  private readonly ttlMs: number;
  /** The figures the latency, trust and cost strategies order by. */
  readonly scores: RoutingScores;
  private readonly random: () => number;
  private readonly events: EventLog;
  private readonly audit: AuditTrail;

  private readonly capabilitySearch: CapabilitySearch;
  private pauses: AgentPauses | null = null;
  /** Agents' concurrency limits as read lately (every receive asks). */
  private readonly limits = new BoundedMap<string, { limit: number | null; at: number }>(10_000);

  constructor(deps: DiscoveryDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.notifier = deps.notifier;
    this.logger = deps.logger;
    this.ttlMs = deps.healthTtlSeconds * 1000;
    this.scores = new RoutingScores(deps.stats, deps.logger);
    this.random = deps.random ?? Math.random;
    this.events = deps.events;
    this.audit = deps.audit;
    this.capabilitySearch = new CapabilitySearch({
      store: deps.store,
      clock: deps.clock,
      logger: deps.logger,
      embedder: deps.embedder ?? null,
    });
  }

  // ---- capabilities ----

  /** The most messages `agentId` may hold leased at once: its capabilities' smallest max_concurrency, read at most once a second. */
  async concurrencyOf(agentId: string): Promise<number | null> {
    const now = this.clock.now();
    const known = this.limits.get(agentId);
    if (known && now - known.at < LIMIT_TTL_MS) return known.limit;
    const limit = await this.store.concurrencyOf(autocommit, agentId);
    this.limits.set(agentId, { limit, at: now });
    return limit;
  }

  /**
   * Registers the agent's capability, or updates it when the agent already has one of that
   * name; an agent's first capability registers the agent (agent.registered, by `actor`).
   */
  async register(
    agentId: string,
    input: { capability: string; metadata?: Metadata; groups?: string[]; max_concurrency?: number },
    actor: string,
  ): Promise<{ capability: Capability; created: boolean }> {
    const metadata = JSON.stringify(input.metadata ?? {});
    if (Buffer.byteLength(metadata) > MAX_METADATA_BYTES) {
      throw InvalidRequest.field('metadata', `must be at most ${MAX_METADATA_BYTES / 1024} KiB of JSON`);
    }
    const groups = [...new Set(input.groups ?? [])];
    const now = this.clock.now();
    const id = newId('cap', now);
    const { row, capability } = await this.store.inTransaction(async (tx) => {
      const known = await this.store.hasCapabilities(tx, agentId);
      const stored = await this.store.upsertCapability(
        tx,
        {
          id,
          agent_id: agentId,
          capability: input.capability,
          metadata,
          groups: JSON.stringify(groups),
          max_concurrency: input.max_concurrency ?? null,
          created_at: now,
          updated_at: now,
        },
        groups,
      );
      await this.audit.record(tx, { action: 'capability.register', resource: { type: 'capability', id: stored.id } });
      const capability = toCapability(stored, await this.pausesIn(tx));
      if (!known) {
        await this.events.append(tx, { type: 'agent.registered', subject: agentId, actor, data: { agent_id: agentId, capability } });
      }
      return { row: stored, capability };
    });
    await this.announceChange();
    return { capability, created: row.id === id };
  }

  async listCapabilities(query: { agent_id?: string; capability?: string; group?: string }, window: Page): Promise<Paged<Capability>> {
    const page = await this.store.listCapabilities(
      autocommit,
      { ...capabilityFilter(query.capability), agentId: query.agent_id, group: query.group },
      window,
    );
    // One read of what budgets pause (a snapshot most of the time) for the whole page.
    const pauses = await this.pausesIn(autocommit);
    return mapPage(page, (row) => toCapability(row, pauses));
  }

  async getCapability(id: string): Promise<Capability> {
    const row = await this.store.findCapability(autocommit, id);
    if (!row) throw new NotFound('Capability', id);
    return toCapability(row, await this.pausesIn(autocommit));
  }

  private async pausesIn(tx: Tx): Promise<PausedScopes | null> {
    return this.pauses === null ? null : this.pauses.pauses(tx);
  }

  /** Removes one capability; an agent may remove only its own (an agent acts only as itself), an admin any. */
  async deleteCapability(principal: Principal, id: string): Promise<void> {
    const row = await this.store.findCapability(autocommit, id);
    if (!row) throw new NotFound('Capability', id);
    assertActsAs(principal, row.agent_id);
    const removed = await this.store.inTransaction(async (tx) => {
      await this.audit.record(tx, { action: 'capability.deregister', resource: { type: 'capability', id } });
      return this.store.deleteCapabilities(tx, { id }, this.clock.now());
    });
    if (removed.length === 0) throw new NotFound('Capability', id);
    await this.announceChange();
  }

  /** Deregisters an agent: all its capabilities and its heartbeat record (agent.deregistered, by `actor`). */
  async deleteAgent(agentId: string, actor: string): Promise<number> {
    const removed = await this.store.inTransaction(async (tx) => {
      await this.audit.record(tx, { action: 'agent.deregister', resource: { type: 'agent', id: agentId } });
      const capabilities = await this.store.deleteCapabilities(tx, { agentId }, this.clock.now());
      const hadHeartbeat = await this.store.heartbeats.deleteHeartbeat(tx, agentId);
      if (capabilities.length === 0 && !hadHeartbeat) throw new NotFound('Agent', agentId);
      await this.events.append(tx, {
        type: 'agent.deregistered',
        subject: agentId,
        actor,
        data: { agent_id: agentId, capabilities: capabilities.length },
      });
      return capabilities;
    });
    if (removed.length > 0) await this.announceChange();
    return removed.length;
  }

  /** Agents that heartbeat, by their health now (the agents gauge of /metrics). */
  async countByHealth(): Promise<Record<string, number>> {
    const now = this.clock.now();
    const counts: Record<string, number> = { healthy: 0, degraded: 0, unhealthy: 0 };
    for (const row of await this.store.heartbeats.heartbeatsWithHealth(autocommit)) {
      const health = healthOf(row.last_heartbeat_at, row.load, now, this.ttlMs);
      counts[health] = (counts[health] ?? 0) + 1;
    }
    return counts;
  }

  /**
   * The health worker's pass: announces each agent whose health (from its heartbeat's age and
   * load) differs from the one last announced (agent.health_changed; unknown before the first
   * heartbeat). Returns how many changed.
   */
  async announceHealthChanges(): Promise<number> {
    const now = this.clock.now();
    // Read first: most passes find no change and need no transaction.
    const changed = (await this.store.heartbeats.heartbeatsWithHealth(autocommit))
      .map((row) => ({ ...row, health: healthOf(row.last_heartbeat_at, row.load, now, this.ttlMs) }))
      .filter((row) => row.health !== row.announced);
    if (changed.length === 0) return 0;
    return this.store.inTransaction(async (tx) => {
      const events: NewEvent[] = [];
      for (const { health, ...row } of changed) {
        if (!(await this.store.heartbeats.announceHealth(tx, row.agent_id, health, now))) continue;
        events.push({
          type: 'agent.health_changed',
          subject: row.agent_id,
          actor: SYSTEM_ACTOR,
          data: {
            agent_id: row.agent_id,
            from: row.announced ?? 'unknown',
            to: health,
            load: row.load,
            last_heartbeat_at: iso(Number(row.last_heartbeat_at)),
          },
        });
      }
      await this.events.append(tx, ...events);
      return events.length;
    });
  }

  private async announceChange(): Promise<void> {
    try {
      await this.notifier.notify(DISCOVERY_CHANGED);
    } catch (err) {
      // The change is committed; other nodes still see it at their next search or poll.
      this.logger.warn({ err }, 'could not publish a discovery change');
    }
  }

  // ---- heartbeats and health ----

  async heartbeat(agentId: string, input: { load?: number; metadata?: Metadata }): Promise<HealthRecord> {
    const now = this.clock.now();
    const row = await this.store.heartbeats.heartbeat(
      autocommit,
      {
        agent_id: agentId,
        load: input.load ?? null,
        metadata: JSON.stringify(input.metadata ?? {}),
        started_at: now,
        last_heartbeat_at: now,
      },
      { ttlMs: this.ttlMs, keepMetadata: input.metadata === undefined },
    );
    return healthView(agentId, row, now, this.ttlMs);
  }

  async health(agentId: string): Promise<HealthRecord> {
    const row = await this.store.heartbeats.findHeartbeat(autocommit, agentId);
    if (!row && !(await this.store.hasCapabilities(autocommit, agentId))) throw new NotFound('Agent', agentId);
    return healthView(agentId, row, this.clock.now(), this.ttlMs);
  }

  // ---- lookup ----

  /** Who says which agents a budget paused: lookups leave them out unless asked not to. */
  skipPausedWith(pauses: AgentPauses): void {
    this.pauses = pauses;
  }

  /** Agents with a capability, one entry each, ordered by the strategy (the HTTP lookup). */
  async lookupAgents(input: LookupInput): Promise<{ agents: AgentEntry[]; strategy: Strategy; total: number }> {
    const found = await this.lookupIn(autocommit, input);
    // What the platform saw of each listed agent, for people choosing (routing itself reads only what its strategy needs).
    const observed = await this.scores.observed(autocommit, found.agents);
    return { ...found, agents: found.agents.map((agent) => ({ ...agent, observed: observed.get(agent.agent_id)! })) };
  }

  /** AgentDirectory port: the lookup's agents, in the caller's transaction (a plan step starting). */
  async lookup(tx: Tx, query: LookupInput): Promise<AgentEntry[]> {
    return (await this.lookupIn(tx, query)).agents;
  }

  private async lookupIn(tx: Tx, input: LookupInput): Promise<{ agents: AgentEntry[]; strategy: Strategy; total: number }> {
    const strategy = (input.strategy ?? DEFAULT_STRATEGY) as Strategy;
    if (!STRATEGIES.includes(strategy)) {
      throw InvalidRequest.field('strategy', `must be one of ${STRATEGIES.join(', ')}`);
    }
    const now = this.clock.now();
    const filter = { ...capabilityFilter(input.capability), group: input.group };
    const freshSince = input.include_unhealthy ? null : now - this.ttlMs;
    const limit = input.limit ?? 50;
    const offset = input.offset ?? 0;
    const pauses = await this.pausesIn(tx);
    // A budget pauses the agent, or the capability this row offers (every agent's, for lookups).
    const paused = (row: CandidateRow) => pauses !== null && (pauses.agent(row.agent_id) || pauses.capability(row.capability));
    const skipping = !input.include_paused && pauses !== null && !pauses.none;
    const entry = (row: CandidateRow, metadata: Metadata): AgentEntry => ({
      agent_id: row.agent_id,
      capability: row.capability,
      capability_id: row.id,
      metadata,
      groups: JSON.parse(row.groups) as string[],
      load: row.load,
      health: healthOf(row.last_heartbeat_at, row.load, now, this.ttlMs),
      last_heartbeat: iso(row.last_heartbeat_at),
      paused: paused(row),
    });

    // An exact name has one row per agent, and these two orders need nothing but the row, so
    // the database sorts and cuts (same order as routing.ts; see DiscoveryStore.rankedCandidates);
    // paused agents (rare) are left out of the rows, so those lookups take the general path.
    if (filter.exact !== undefined && !skipping && (strategy === 'first_available' || strategy === 'least_loaded')) {
      // The tiers of rankedCandidates have no offset of their own: a page reads the agents before
      // it too (offset + limit rows, never more than the in-memory order below reads for any page).
      const { rows, total } = await this.store.rankedCandidates(
        tx,
        { exact: filter.exact, group: filter.group },
        {
          order: strategy,
          includeUnhealthy: freshSince === null,
          staleBefore: now - this.ttlMs,
          degradedLoad: DEGRADED_LOAD,
          limit: offset + limit,
        },
      );
      return { agents: rows.slice(offset).map((row) => entry(row, parseObject(row.metadata))), strategy, total };
    }

    const rows = await this.store.candidates(tx, filter, freshSince);
    // One entry per agent: its first-registered matching capability (rows come in that order).
    const byAgent = new Map<string, CandidateRow>();
    for (const row of rows) if (!byAgent.has(row.agent_id) && !(skipping && paused(row))) byAgent.set(row.agent_id, row);
    const picked = [...byAgent.values()];
    const metadata = new Map(picked.map((row) => [row.id, parseObject(row.metadata)]));
    const scores = await this.scores.of(tx, strategy, picked, metadata);
    const cursor = strategy === 'round_robin' ? await this.store.nextCursor(tx, `${input.capability ?? '*'}|${input.group ?? ''}`) : 0;
    const candidates: Candidate[] = picked.map((row) => ({
      agent_id: row.agent_id,
      order: row.id,
      health: healthOf(row.last_heartbeat_at, row.load, now, this.ttlMs),
      load: row.load,
      weight: finite(metadata.get(row.id)!.weight) ?? 1,
      score: scores.get(row.agent_id)?.value ?? null,
    }));
    const ordered = route(strategy, candidates, { cursor, random: this.random }).slice(offset, offset + limit);
    const agents = ordered.map((candidate): AgentEntry => {
      const row = byAgent.get(candidate.agent_id)!;
      const result = entry(row, metadata.get(row.id)!);
      const score = scores.get(row.agent_id);
      if (isScored(strategy))
        Object.assign(result, { [SCORE_FIELD[strategy]]: score?.value ?? null, score_source: score?.source ?? 'none' });
      return result;
    });
    return { agents, strategy, total: candidates.length };
  }

  // ---- groups ----

  async listGroups(window: Page): Promise<Paged<GroupCount>> {
    return this.store.groups.listGroups(autocommit, window);
  }

  async groupAgents(group: string, window: Page): Promise<Paged<GroupMember>> {
    const page = await this.store.groups.groupAgents(autocommit, group, window);
    if (page.total === 0) throw new NotFound('Group', group);
    const [capabilities, heartbeats] = await Promise.all([
      this.store.groups.capabilitiesInGroup(autocommit, group, page.items),
      this.store.heartbeats.heartbeatsOf(autocommit, page.items),
    ]);
    const now = this.clock.now();
    const items = page.items.map((agentId): GroupMember => {
      const beat = heartbeats.find((h) => h.agent_id === agentId);
      return {
        agent_id: agentId,
        capabilities: capabilities.filter((c) => c.agent_id === agentId).map((c) => c.capability),
        health: healthOf(beat?.last_heartbeat_at ?? null, beat?.load ?? null, now, this.ttlMs),
        load: beat?.load ?? null,
        last_heartbeat: iso(beat?.last_heartbeat_at ?? null),
      };
    });
    return { ...page, items };
  }

  // ---- search (CapabilitySearch) ----

  searchCapabilities(input: SearchInput): Promise<{ results: SearchHit[]; ranker: 'lexical' | 'lexical+embeddings' }> {
    return this.capabilitySearch.search(input);
  }

  /** AgentDirectory port: the search results. */
  async search(query: SearchInput): Promise<SearchHit[]> {
    return (await this.searchCapabilities(query)).results;
  }

  /** The index worker's pass: the search index brought up to the database (CapabilitySearch.syncIndex). */
  syncIndex(): Promise<void> {
    return this.capabilitySearch.syncIndex();
  }

  /** The index worker's pass: vectors for the capabilities indexed without one. */
  embedMissing(): Promise<void> {
    return this.capabilitySearch.embedMissing();
  }

  /** The index worker's hourly pass: deletions older than a day forgotten. */
  pruneHistory(): Promise<number> {
    return this.capabilitySearch.pruneHistory();
  }
}
