import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import type { InboxDepth } from '../kernel/metrics.js';
import type { AgentDeliveryStats } from '../kernel/ports.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { RateLimiter } from '../kernel/rate-limiter.js';
import { checkReceiver, toMessage, type Caller, type Message } from './messages.js';
import type { DeliveryRow } from './store.js';
import type { InboxCounts, InboxViewsStore } from './views-store.js';

/** Inboxes the depth gauges read per scrape (the top ones are shown, the rest summed). */
const MAX_METRIC_INBOXES = 5000;

export interface Attempt {
  attempt: number;
  receiver: string;
  delivered_at: string;
  outcome: string | null;
  reason: string | null;
  ended_at: string | null;
}

export interface DeadLetter extends Message {
  reason: string | null;
  dead_at: string | null;
  attempts: Attempt[];
}

/** An agent's inbox in numbers (GET /messaging/inboxes). */
export interface InboxSummary {
  agent_id: string;
  pending: number;
  leased: number;
  dead_letters: number;
  oldest_pending_at: string | null;
  oldest_pending_age_seconds: number | null;
}

/** A message looked at in its inbox, without leasing it. */
export interface InboxMessage extends Message {
  visible_at: string;
  deliveries: number;
  max_deliveries: number;
  lease_expires_at: string | null;
  leased_to: string | null;
  /** ordering_key: an earlier (or leased) message of its ordering key is not settled yet. */
  blocked_by: 'ordering_key' | null;
}

function toAttempt(row: DeliveryRow): Attempt {
  return {
    attempt: row.attempt,
    receiver: row.receiver,
    delivered_at: iso(row.delivered_at),
    outcome: row.outcome,
    reason: row.reason,
    ended_at: iso(row.ended_at),
  };
}

/** Looks at inboxes without changing them: their numbers, their messages, their dead letters, their agents' delivery stats. */
export class InboxViews {
  constructor(private readonly deps: { store: InboxViewsStore; clock: Clock; limiter: RateLimiter }) {}

  private get store() {
    return this.deps.store;
  }

  /** The agent whose inbox a list is about: the one asked for, else the calling agent (an admin: every agent). */
  private inboxOf(caller: Caller, agentId: string | undefined): string | undefined {
    const agent = agentId ?? (caller.admin ? undefined : caller.agentId!);
    if (agent !== undefined) checkReceiver(caller, agent);
    return agent;
  }

  /**
   * The inboxes holding messages, by agent id, in numbers; with `agentId` that agent's inbox,
   * empty or not. An agent sees its own only.
   */
  async listInboxes(caller: Caller, agentId: string | undefined, window: Page): Promise<Paged<InboxSummary>> {
    const agent = this.inboxOf(caller, agentId);
    const now = this.deps.clock.now();
    const page = await this.store.inboxCounts(autocommit, agent, now, window);
    if (agent !== undefined && page.total === 0) {
      const empty = { destination: agent, pending: 0, leased: 0, dead: 0, oldest_pending_at: null };
      return { total: 1, items: window.offset === 0 ? [summary(empty, now)] : [] };
    }
    return { ...page, items: page.items.map((counts) => summary(counts, now)) };
  }

  /** Inboxes with messages a receive would take now (the inbox alert conditions). */
  readyInboxes(now: number): Promise<{ agent_id: string; depth: number; oldest_at: number }[]> {
    return this.store.readyInboxes(autocommit, now);
  }

  /** Every inbox holding messages, deepest first (the inbox gauges of /metrics; at most MAX_METRIC_INBOXES). */
  async depths(): Promise<InboxDepth[]> {
    const now = this.deps.clock.now();
    const page = await this.store.inboxCounts(autocommit, undefined, now, { limit: MAX_METRIC_INBOXES, offset: 0 }, true);
    return page.items
      .map((counts) => {
        const { agent_id, pending, oldest_pending_age_seconds } = summary(counts, now);
        return { agent_id, pending, oldest_pending_age_seconds };
      })
      .sort((a, b) => b.pending - a.pending);
  }

  /** Looks at an agent's pending or leased messages, in inbox order; never leases them. */
  async inboxMessages(caller: Caller, agentId: string, state: 'pending' | 'leased', window: Page): Promise<Paged<InboxMessage>> {
    checkReceiver(caller, agentId);
    const leased = state === 'leased';
    const page = await this.store.inboxMessages(autocommit, agentId, leased, this.deps.clock.now(), window);
    return {
      ...page,
      items: page.items.map((row) => ({
        ...toMessage(row),
        visible_at: iso(row.visible_at),
        deliveries: row.deliveries,
        max_deliveries: row.max_deliveries,
        lease_expires_at: leased ? iso(row.visible_at) : null,
        leased_to: leased ? row.receiver : null,
        blocked_by: row.held ? ('ordering_key' as const) : null,
      })),
    };
  }

  async listDeadLetters(caller: Caller, agentId: string | undefined, window: Page): Promise<Paged<DeadLetter>> {
    const agent = this.inboxOf(caller, agentId);
    const page = await this.store.listDeadLetters(autocommit, agent, window);
    const attempts = await this.store.attemptsOf(
      autocommit,
      page.items.map((r) => r.id),
    );
    return {
      ...page,
      items: page.items.map((row) => ({
        ...toMessage(row),
        reason: row.dead_reason,
        dead_at: iso(row.dead_at),
        attempts: attempts.filter((a) => a.message_id === row.id).map(toAttempt),
        origin: row.origin_kind !== null && row.origin_ref !== null ? { kind: row.origin_kind, ref: row.origin_ref } : null,
      })),
    };
  }

  async rateLimit(caller: Caller, agentId: string): Promise<{ limit: number; remaining: number; reset_at: string }> {
    checkReceiver(caller, agentId);
    const state = await this.deps.limiter.peek(`agent:${agentId}`);
    return { limit: state.limit, remaining: state.remaining, reset_at: iso(state.resetAt) };
  }

  /**
   * Measured latency (median delivery→ack) and success ratio per agent, from its last 100
   * settled deliveries of the capability asked about when it has some, else of all its deliveries.
   */
  async statsFor(tx: Tx, agents: readonly { agent_id: string; capability?: string }[]): Promise<Map<string, AgentDeliveryStats>> {
    const rows = await this.store.deliveryStats(tx, agents, 100);
    const result = new Map<string, AgentDeliveryStats>();
    for (const { agent_id: agentId } of agents) {
      const ofAgent = rows.filter((row) => row.destination === agentId);
      const ofCapability = ofAgent.filter((row) => Number(row.of_capability) === 1);
      const mine = ofCapability.length > 0 ? ofCapability : ofAgent.filter((row) => Number(row.of_capability) === 0);
      const acked = mine.filter((row) => row.outcome === 'acked');
      const samples = acked.map((row) => Number(row.latency)).sort((a, b) => a - b);
      result.set(agentId, {
        latency_ms: samples.length > 0 ? samples[Math.floor(samples.length / 2)]! : null,
        success_ratio: mine.length > 0 ? acked.length / mine.length : null,
        samples: mine.length,
        of_capability: ofCapability.length > 0,
      });
    }
    return result;
  }
}

function summary(counts: InboxCounts, now: number): InboxSummary {
  const oldest = counts.oldest_pending_at;
  return {
    agent_id: counts.destination,
    pending: counts.pending,
    leased: counts.leased,
    dead_letters: counts.dead,
    oldest_pending_at: iso(oldest),
    oldest_pending_age_seconds: oldest === null ? null : Math.max(0, Math.floor((now - oldest) / 1000)),
  };
}
