/**
 * Agent health and the routing strategies of a lookup: pure functions of the
 * candidates, the time and a random source, so they are tested without a server.
 */

export type Health = 'healthy' | 'degraded' | 'unhealthy' | 'unknown';

export const STRATEGIES = ['round_robin', 'least_loaded', 'random', 'first_available', 'weighted', 'latency', 'trust', 'cost'] as const;
export type Strategy = (typeof STRATEGIES)[number];
export const DEFAULT_STRATEGY: Strategy = 'first_available';

/** Load at or above this marks a live agent `degraded`. */
export const DEGRADED_LOAD = 0.9;

/** Health from the last heartbeat: within the TTL (inclusive) is alive. */
export function healthOf(lastHeartbeat: number | null, load: number | null, now: number, ttlMs: number): Health {
  if (lastHeartbeat === null) return 'unknown';
  if (now - lastHeartbeat > ttlMs) return 'unhealthy';
  return load !== null && load >= DEGRADED_LOAD ? 'degraded' : 'healthy';
}

export interface Candidate {
  agent_id: string;
  /** Registration order key (the capability id, time-sortable). */
  order: string;
  health: Health;
  load: number | null;
  /** metadata.weight (default 1). */
  weight: number;
  /** The latency (ms, lower is better), trust (0..1, higher is better) or cost (USD per call, lower is better) used, if any. */
  score: number | null;
}

export interface RoutingContext {
  /** How many times this capability's round-robin cursor was used before. */
  cursor: number;
  /** Uniform in [0, 1). */
  random: () => number;
}

const byOrder = (a: Candidate, b: Candidate) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0);

// Among live agents, first_available prefers healthy over busy over never-heard-of.
const AVAILABILITY: Record<Health, number> = { healthy: 0, degraded: 1, unknown: 2, unhealthy: 3 };

/** Ascending by a key with nulls last, then registration order. */
function sortBy(candidates: Candidate[], key: (c: Candidate) => number | null): Candidate[] {
  return [...candidates].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    if (ka !== kb) {
      if (ka === null) return 1;
      if (kb === null) return -1;
      if (ka !== kb) return ka - kb;
    }
    return byOrder(a, b);
  });
}

function shuffle(candidates: Candidate[], random: () => number): Candidate[] {
  const out = [...candidates].sort(byOrder);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Weighted random order (Efraimidis–Spirakis): each agent draws u^(1/w); sorting by the draw
 * makes P(first) proportional to its weight, and the rest of the order likewise. Weight 0
 * agents come last, in registration order.
 */
function weightedShuffle(candidates: Candidate[], random: () => number): Candidate[] {
  const keyed = [...candidates].sort(byOrder).map((c) => {
    const u = Math.max(random(), Number.MIN_VALUE);
    return { c, key: c.weight > 0 ? Math.log(u) / c.weight : Number.NEGATIVE_INFINITY };
  });
  keyed.sort((a, b) => (b.key === a.key ? byOrder(a.c, b.c) : b.key - a.key));
  return keyed.map((k) => k.c);
}

function rotate(candidates: Candidate[], cursor: number): Candidate[] {
  const ordered = [...candidates].sort(byOrder);
  if (ordered.length === 0) return ordered;
  const start = cursor % ordered.length;
  return [...ordered.slice(start), ...ordered.slice(0, start)];
}

function orderGroup(strategy: Strategy, candidates: Candidate[], context: RoutingContext): Candidate[] {
  switch (strategy) {
    case 'round_robin':
      return rotate(candidates, context.cursor);
    case 'least_loaded':
      return sortBy(candidates, (c) => c.load);
    case 'random':
      return shuffle(candidates, context.random);
    case 'first_available':
      return sortBy(candidates, (c) => AVAILABILITY[c.health]);
    case 'weighted':
      return weightedShuffle(candidates, context.random);
    case 'latency':
      return sortBy(candidates, (c) => c.score);
    case 'trust':
      return sortBy(candidates, (c) => (c.score === null ? null : -c.score));
    case 'cost':
      return sortBy(candidates, (c) => c.score);
  }
}

/**
 * Orders candidates by a strategy. Unhealthy agents (present only when the caller asked for
 * them) always follow the live ones, ordered by the same strategy among themselves.
 */
export function route(strategy: Strategy, candidates: Candidate[], context: RoutingContext): Candidate[] {
  const live = candidates.filter((c) => c.health !== 'unhealthy');
  const dead = candidates.filter((c) => c.health === 'unhealthy');
  return [...orderGroup(strategy, live, context), ...orderGroup(strategy, dead, context)];
}
