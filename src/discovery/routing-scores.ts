import type { Logger } from 'pino';
import type { DeliveryStats } from '../kernel/ports.js';
import type { CallCosts } from '../kernel/usage-ports.js';
import type { Tx } from '../kernel/tx.js';
import type { Strategy } from './routing.js';
import type { CandidateRow } from './store.js';
import type { Metadata } from './views.js';

/** Where a routing figure came from: measured by the platform, claimed in the agent's metadata, or neither. */
export type ScoreSource = 'measured' | 'metadata' | 'none';
export type Score = { value: number | null; source: ScoreSource };

/** The strategies that order by a figure, and the metadata key an agent claims it under. */
const CLAIMED = { latency: 'latency_ms', trust: 'trust_score', cost: 'cost_usd' } as const;
type ScoredStrategy = keyof typeof CLAIMED;

/** How far back the cost strategy looks at what calls cost. */
const COST_WINDOW_DAYS = 7;

/** What the platform measured of an agent (the lookup's `observed`). */
export interface Observed {
  success_ratio: number | null;
  latency_ms: number | null;
  deliveries: number;
  /** success_ratio, latency_ms and deliveries are of the looked-up capability (else of all the agent's messages). */
  of_capability: boolean;
  cost_usd: number | null;
  calls: number;
}

export const finite = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

export function isScored(strategy: Strategy): strategy is ScoredStrategy {
  return strategy in CLAIMED;
}

/**
 * The figure each candidate is ordered by under the latency (ms), trust (0..1) and cost (USD
 * per call) strategies: what the platform measured when it has history for the agent (messaging's
 * deliveries, usage's reported costs), else what the agent claims in its metadata.
 */
export class RoutingScores {
  private costs: CallCosts | null = null;

  constructor(
    private readonly stats: DeliveryStats | undefined,
    private readonly logger: Logger,
  ) {}

  /** Who knows what calls cost (usage, bound after it is built). */
  costsFrom(costs: CallCosts): void {
    this.costs = costs;
  }

  async of(tx: Tx, strategy: Strategy, rows: CandidateRow[], metadata: Map<string, Metadata>): Promise<Map<string, Score>> {
    const scores = new Map<string, Score>();
    if (!isScored(strategy) || rows.length === 0) return scores;
    const measured = await this.measured(tx, strategy, rows);
    for (const row of rows) {
      const observed = measured.get(row.agent_id) ?? null;
      const claimed = finite(metadata.get(row.id)![CLAIMED[strategy]]);
      if (observed !== null) scores.set(row.agent_id, { value: observed, source: 'measured' });
      else if (claimed !== null) scores.set(row.agent_id, { value: claimed, source: 'metadata' });
      else scores.set(row.agent_id, { value: null, source: 'none' });
    }
    return scores;
  }

  /**
   * Per agent, what the platform measured: success ratio and median latency of its last 100
   * settled deliveries (of the capability when it served it for plan steps), mean cost per call over 7 days (of steps for its capability when it
   * reported them); nulls where nothing was measured or the measure is unavailable.
   */
  async observed(tx: Tx, agents: readonly { agent_id: string; capability: string }[]): Promise<Map<string, Observed>> {
    const ids = agents.map((a) => a.agent_id);
    const [stats, costs] = await Promise.all([
      this.stats && ids.length > 0 ? this.stats.statsFor(tx, agents).catch(() => null) : null,
      this.costs && ids.length > 0 ? this.costs.meanCosts(tx, agents, COST_WINDOW_DAYS).catch(() => null) : null,
    ]);
    return new Map(
      ids.map((id) => {
        const delivered = stats?.get(id);
        const spent = costs?.get(id);
        return [
          id,
          {
            success_ratio: delivered?.success_ratio ?? null,
            latency_ms: delivered?.latency_ms ?? null,
            deliveries: delivered?.samples ?? 0,
            of_capability: delivered?.of_capability ?? false,
            cost_usd: spent?.cost_usd ?? null,
            calls: spent?.calls ?? 0,
          },
        ];
      }),
    );
  }

  /** The measured figure per agent; none when the measure is unavailable (routing goes on on claims). */
  private async measured(tx: Tx, strategy: ScoredStrategy, rows: CandidateRow[]): Promise<Map<string, number>> {
    const figures = new Map<string, number>();
    try {
      if (strategy === 'cost') {
        const costs = this.costs === null ? new Map() : await this.costs.meanCosts(tx, rows, COST_WINDOW_DAYS);
        for (const [agentId, { cost_usd }] of costs) figures.set(agentId, cost_usd);
      } else if (this.stats) {
        const stats = await this.stats.statsFor(tx, rows);
        for (const [agentId, m] of stats) {
          const value = m.samples > 0 ? (strategy === 'latency' ? m.latency_ms : m.success_ratio) : null;
          if (value !== null) figures.set(agentId, value);
        }
      }
    } catch (err) {
      this.logger.warn({ err, strategy }, 'measured routing figures unavailable; routing on claimed metadata');
    }
    return figures;
  }
}
