import type { Tx } from './tx.js';
import type { MessageOrigin } from './ports.js';

/** Contracts the usage domain implements for the others (see ports.ts): usage, budgets and costs. */

/** What one model call (or a handler's several) consumed, as an agent reports it. */
export interface UsageReport {
  model: string;
  provider?: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens?: number;
  cost_usd?: number;
}

/** An acknowledged message that carried usage: whose it is and what work it was part of. */
export interface UsageSource {
  message_id: string;
  agent_id: string;
  origin: MessageOrigin | null;
}

/**
 * Implemented by usage: records usage reported with an acknowledgement in the acknowledge's
 * transaction (`record`), and counts it in the metrics once that transaction committed (`committed`).
 */
export interface UsageRecorder {
  /** The reports of one acknowledgement (a batch's, from the agent channel), together. */
  record(tx: Tx, reports: readonly SourcedUsage[]): Promise<void>;
  /**
   * The record of a report on a message no run owns, when its insert is all there is to do (no
   * budget counts it, as this node knows now), for the acknowledgement's own statement to insert;
   * else null, and it goes to `record`.
   */
  plain(agentId: string, usage: UsageReport): PlainUsageRecord | null;
  committed(reports: readonly SourcedUsage[]): void;
}

/** A usage record with nothing but its insert to do: its agent and message are the acknowledged message's. */
export interface PlainUsageRecord {
  id: string;
  model: string;
  provider: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost_usd: number;
  recorded_at: number;
}

/** A usage report and the acknowledged message it came with. */
export interface SourcedUsage {
  source: UsageSource;
  usage: UsageReport;
}

/** The kinds of scope a budget pauses: one agent, capability or plan, or every agent (value ''). */
export type PauseScopeKind = 'global' | 'agent' | 'capability' | 'plan';

/** A scope's pause as answers show it: the budget that paused it and when the pause ends (its period's end; null: a resume's). */
export interface BudgetPause {
  budget_id: string;
  until: string | null;
}

/** What budgets pause now: agents (each, or all with a global budget), capabilities and plans. */
export interface PausedScopes {
  /** Nothing is paused (the common case). */
  readonly none: boolean;
  agent(agentId: string): boolean;
  capability(capability: string): boolean;
  plan(planId: string): boolean;
  /** The pause of that scope itself (an agent's ignores the global one), the longest when several budgets pause it. */
  pauseOf(kind: PauseScopeKind, value: string): BudgetPause | null;
}

/**
 * Implemented by usage (budgets). Messaging holds paused agents' inboxes (nothing is delivered),
 * discovery leaves paused agents and capabilities out of lookups, plan steps wait.
 */
export interface AgentPauses {
  pauses(tx: Tx): Promise<PausedScopes>;
}

/** Usage summed: how many reports, their tokens and cost. */
export interface UsageSum {
  count: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost_usd: number;
}

/** Implemented by usage: a run's usage, in all and by step id, for the run's answer (coordination). */
export interface RunUsage {
  ofRun(tx: Tx, runId: string): Promise<{ total: UsageSum; steps: Map<string, UsageSum> }>;
}

/** Implemented by usage: what agents' calls cost of late (the `cost` routing strategy). */
export interface CallCosts {
  /**
   * Per agent: its mean cost per call over the last `days`, for `capability` when it reported
   * usage of steps for it, else over all its usage; absent for an agent that reported none.
   */
  meanCosts(
    tx: Tx,
    agents: readonly { agent_id: string; capability: string }[],
    days: number,
  ): Promise<Map<string, { cost_usd: number; calls: number }>>;
}

/** Implemented by usage: each budget's consumption in its current period (alert rules' `budget` condition). */
export interface BudgetReadings {
  /** Every budget with the larger of its cost and token consumption as a fraction of that limit (0 without limits). */
  consumption(): Promise<{ budget_id: string; name: string; fraction: number }[]>;
}
