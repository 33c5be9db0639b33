import type { Principal } from '../auth/index.js';
import { parseAttemptRef } from '../coordination/index.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import type { CallCosts, PlainUsageRecord, RunUsage, SourcedUsage, UsageRecorder, UsageReport, UsageSum } from '../kernel/usage-ports.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import type { BudgetsService } from './budgets.js';
import type { RecordUsageBody, UsageQuery, UsageRecord, UsageTotals } from './schemas.js';
import { DAY_MS, HOUR_MS, type UsageRow, type UsageStore } from './store.js';

export interface UsageDeps {
  store: UsageStore;
  clock: Clock;
  metrics: DomainMetrics;
  budgets: BudgetsService;
}

/** The work a report belongs to, when it belongs to a run. */
interface Link {
  message_id: string | null;
  run_id: string | null;
  step_id: string | null;
}

/** A report to record: whose, what, and for which work. */
interface Report {
  agentId: string;
  usage: UsageReport;
  link: Link;
}

/** What a report records, beside its agent and links, at `now`. */
function plainRecord(usage: UsageReport, now: number): PlainUsageRecord {
  return {
    id: newId('usg', now),
    model: usage.model,
    provider: usage.provider ?? null,
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    cached_tokens: usage.cached_tokens ?? 0,
    cost_usd: usage.cost_usd ?? 0,
    recorded_at: now,
  };
}

function toRecord(row: UsageRow): UsageRecord {
  return { ...row, recorded_at: iso(row.recorded_at) };
}

/** A time filter as an hour start: `after` rounded down, `before` up (the rollup's grain). */
function hourOf(field: string, value: string | undefined, up: boolean): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw InvalidRequest.field(field, 'must be an ISO 8601 time');
  const start = ms - (ms % HOUR_MS);
  return up && start !== ms ? start + HOUR_MS : start;
}

/**
 * Usage: what agents report their work consumed (tokens, cost), with an acknowledgement or on its
 * own, linked to the run and step of the message when it had one, and its totals.
 */
export class UsageService implements UsageRecorder, RunUsage, CallCosts {
  constructor(private readonly deps: UsageDeps) {}

  /** CallCosts port, from the hourly rollup (whole hours: a call counts from the start of its hour). */
  async meanCosts(tx: Tx, agents: readonly { agent_id: string; capability: string }[], days: number) {
    const since = this.deps.clock.now() - days * DAY_MS;
    const rows = await this.deps.store.costsSince(tx, [...new Set(agents.map((a) => a.agent_id))], since);
    const figures = new Map<string, { cost_usd: number; calls: number }>();
    for (const { agent_id, capability } of agents) {
      const mine = rows.filter((row) => row.agent_id === agent_id);
      const ofCapability = mine.filter((row) => row.capability === capability);
      const counted = ofCapability.length > 0 ? ofCapability : mine;
      const calls = counted.reduce((n, row) => n + Number(row.calls), 0);
      if (calls > 0) figures.set(agent_id, { cost_usd: counted.reduce((sum, row) => sum + Number(row.cost_usd), 0) / calls, calls });
    }
    return figures;
  }

  /** Usage port: the acknowledged messages' usage, in the acknowledge's transaction. */
  async record(tx: Tx, reports: readonly SourcedUsage[]): Promise<void> {
    await this.insert(
      tx,
      reports.map(({ source, usage }) => {
        const step = source.origin?.kind === 'plan_step' ? parseAttemptRef(source.origin.ref) : null;
        return {
          agentId: source.agent_id,
          usage,
          link: { message_id: source.message_id, run_id: step?.runId ?? null, step_id: step?.stepId ?? null },
        };
      }),
    );
  }

  /** Usage port: a record outside any run that no budget counts, for the acknowledgement's own statement. */
  plain(agentId: string, usage: UsageReport): PlainUsageRecord | null {
    return this.deps.budgets.countsNone({ agent_id: agentId, capability: null, plan_id: null })
      ? plainRecord(usage, this.deps.clock.now())
      : null;
  }

  /** Counted in the metrics once per agent and model of the batch: a turn's acks often share both. */
  committed(reports: readonly SourcedUsage[]): void {
    const sums = new Map<string, { agent_id: string; model: string; input_tokens: number; output_tokens: number; cost_usd: number }>();
    for (const { source, usage } of reports) {
      const key = `${source.agent_id}\u0000${usage.model}`;
      const sum = sums.get(key) ?? { agent_id: source.agent_id, model: usage.model, input_tokens: 0, output_tokens: 0, cost_usd: 0 };
      sum.input_tokens += usage.input_tokens;
      sum.output_tokens += usage.output_tokens;
      sum.cost_usd += usage.cost_usd ?? 0;
      sums.set(key, sum);
    }
    for (const sum of sums.values()) this.deps.metrics.usageRecorded(sum);
  }

  /** Usage outside an acknowledgement; an agent records only its own. */
  async recordOwn(principal: Principal, body: RecordUsageBody): Promise<UsageRecord> {
    const { agent_id, run_id, step_id, ...usage } = body;
    if (principal.role === 'agent' && principal.agentId !== agent_id) {
      throw new Forbidden(`An agent records its own usage: agent_id must be '${principal.agentId}', not '${agent_id}'`);
    }
    if (step_id !== undefined && run_id === undefined) throw InvalidRequest.field('step_id', 'needs run_id');
    const rows = await this.deps.store.inTransaction((tx) =>
      this.insert(tx, [{ agentId: agent_id, usage, link: { message_id: null, run_id: run_id ?? null, step_id: step_id ?? null } }], true),
    );
    const row = rows[0]!;
    this.deps.metrics.usageRecorded(row);
    return toRecord(row);
  }

  /** RunUsage port: the run's usage, in all and by step. */
  async ofRun(tx: Tx, runId: string): Promise<{ total: UsageSum; steps: Map<string, UsageSum> }> {
    const total: UsageSum = { count: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, cost_usd: 0 };
    const steps = new Map<string, UsageSum>();
    for (const { key, ...sum } of await this.deps.store.byStepOfRun(tx, runId)) {
      for (const field of Object.keys(total) as (keyof UsageSum)[]) total[field] += sum[field];
      if (key !== '') steps.set(key, sum);
    }
    return { total, steps };
  }

  async totals(query: UsageQuery): Promise<UsageTotals> {
    const filter = {
      agentId: query.agent_id,
      planId: query.plan_id,
      runId: query.run_id,
      model: query.model,
      from: hourOf('after', query.after, false),
      until: hourOf('before', query.before, true),
    };
    const rows = await this.deps.store.totals(autocommit, query.group_by, filter, query.limit ?? 100);
    return {
      group_by: query.group_by,
      rows: rows.map(({ key, ...sums }) => ({
        // '' stands for "none" in the rollup's key; a day is its date.
        key: key === '' ? null : query.group_by === 'day' ? new Date(Number(key)).toISOString().slice(0, 10) : String(key),
        ...sums,
      })),
    };
  }

  /**
   * The records of `reports`, their rollup and their budgets, in `tx`. `requireRun`: a run named
   * but not found is a 404 (a report on its own), not a record without its plan (a step's run
   * deleted since).
   */
  private async insert(tx: Tx, reports: readonly Report[], requireRun = false): Promise<UsageRow[]> {
    const now = this.deps.clock.now();
    const rows: UsageRow[] = [];
    for (const { agentId, usage, link } of reports) {
      const context = link.run_id === null ? undefined : await this.deps.store.runContext(tx, link.run_id, link.step_id);
      if (requireRun && link.run_id !== null && context === undefined) throw new NotFound('Run', link.run_id);
      rows.push({
        ...plainRecord(usage, now),
        agent_id: agentId,
        ...link,
        plan_id: context?.plan_id ?? null,
        capability: context?.capability ?? null,
      });
    }
    await this.deps.store.insert(tx, rows);
    await this.deps.budgets.consume(tx, rows);
    return rows;
  }
}
