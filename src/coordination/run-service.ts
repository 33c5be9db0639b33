import { assertMayChange } from '../auth/ownership.js';
import { StepRefs, type SignedStepRefs } from './step-refs.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { NotFound } from '../kernel/errors.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditTrail, Publication, SignedPayloadRef } from '../kernel/ports.js';
import type { RunUsage, UsageSum } from '../kernel/usage-ports.js';
import { parseNullableJson } from '../kernel/json.js';
import { topicMatches } from '../kernel/topics.js';
import type { Caller } from './caller.js';
import { toCheckpoint, type Checkpoint } from './checkpoints.js';
import type { CheckpointRow } from './step-work-store.js';
import type { RunEngine } from './engine.js';
import type { PlanDefinition } from './plan-definition.js';
import type { PlanStore } from './plan-store.js';
import { RUN_FINISHED, type Adaptive, type Revision, type StepDetail } from './run-state.js';
import type { RunEventRow, RunLabels, RunRow, RunStepRow } from './run-list-store.js';
import type { RunLimitsStore } from './run-limits-store.js';
import type { RunStore } from './run-store.js';
import type { RunBlockedBy, RunStatus, StepBlockedBy, StepStatus } from './tables.js';

/** GET /coordination/runs's filters (times as ISO 8601). */
export interface RunListQuery {
  plan_id?: string;
  status?: RunStatus;
  started_after?: string;
  started_before?: string;
  tag?: string;
  /** `key=value`. */
  metadata?: string;
}

/** A `key=value` filter as the store takes it (the value may hold `=` too). */
function metadataFilter(text: string): { key: string; value: string } {
  const at = text.indexOf('=');
  return { key: text.slice(0, at), value: text.slice(at + 1) };
}

export interface RunStep {
  id: string;
  type: string;
  status: StepStatus;
  attempt: number;
  agent: string | null;
  child_run_id: string | null;
  started_at: string | null;
  completed_at: string | null;
  input: unknown;
  output: unknown;
  error: string | null;
  /** What agents reported for it (the answer of one run's GET). */
  usage?: UsageSum;
  /** The latest progress its agent saved. */
  checkpoint: Checkpoint | null;
  blocked_by: StepBlockedBy | null;
  reused: boolean;
}

export interface Run {
  id: string;
  plan_id: string;
  plan_version: number;
  status: RunStatus;
  blocked_by: RunBlockedBy | StepBlockedBy | null;
  priority: number;
  current_step: string | null;
  input: Record<string, unknown>;
  /** Null when it is kept by reference (output_ref). */
  output: unknown;
  output_ref?: SignedPayloadRef;
  error: string | null;
  adaptive: Adaptive | null;
  revisions: Revision[];
  parent_run_id: string | null;
  rerun_of: string | null;
  steps: RunStep[];
  tags: string[];
  metadata: Record<string, string>;
  created_by: string;
  started_at: string;
  completed_at: string | null;
  usage?: UsageSum;
}

export interface RunEvent {
  seq: number;
  type: string;
  step_id: string | null;
  detail: Record<string, unknown>;
  at: string;
}

function toRun(
  run: RunRow,
  steps: RunStepRow[],
  { tags, metadata }: RunLabels,
  checkpoints: Map<string, CheckpointRow> = new Map(),
  signed: SignedStepRefs = new Map(),
): Run {
  const definition = JSON.parse(run.definition) as PlanDefinition;
  const types = new Map(definition.steps.map((s) => [s.id, s]));
  const typeOf = (row: RunStepRow) => {
    if (row.parent_step_id !== null) return types.get(row.parent_step_id)?.step?.type ?? 'agent';
    return types.get(row.step_id)?.type ?? 'agent';
  };
  const current = RUN_FINISHED.has(run.status) ? undefined : steps.find((s) => s.status === 'running' || s.status === 'waiting');
  const blocked = (s: RunStepRow) => (s.status === 'waiting' && (JSON.parse(s.detail) as StepDetail).blocked_by) || null;
  const runSteps = steps.map((s) => ({
    ...StepRefs.refsOf(signed, s),
    id: s.step_id,
    type: typeOf(s),
    status: s.status,
    attempt: s.attempt,
    agent: s.agent_id,
    child_run_id: s.child_run_id,
    started_at: iso(s.started_at),
    completed_at: iso(s.completed_at),
    // By reference: the value is the artifact's alone (step-outputs.ts reads it back when needed).
    input: s.input_ref === null ? parseNullableJson(s.input) : null,
    output: s.output_ref === null ? parseNullableJson(s.output) : null,
    error: s.error,
    blocked_by: blocked(s),
    reused: s.detail.includes('"reused_from"'),
    checkpoint: checkpoints.has(s.step_id) ? toCheckpoint(checkpoints.get(s.step_id)!) : null,
  }));
  return {
    id: run.id,
    plan_id: run.plan_id,
    plan_version: run.plan_version,
    status: run.status,
    blocked_by: run.blocked_by ?? runSteps.find((s) => s.blocked_by !== null)?.blocked_by ?? null,
    priority: run.priority,
    current_step: current?.step_id ?? null,
    input: JSON.parse(run.input) as Record<string, unknown>,
    output: parseNullableJson(run.output),
    ...signed.get(run.id),
    error: run.error,
    adaptive: parseNullableJson(run.adaptive) as Adaptive | null,
    revisions: JSON.parse(run.revisions) as Revision[],
    parent_run_id: run.parent_run_id,
    rerun_of: run.rerun_of,
    tags,
    metadata,
    steps: runSteps,
    created_by: run.created_by,
    started_at: iso(run.started_at),
    completed_at: iso(run.completed_at),
  };
}

function toEvent(row: RunEventRow): RunEvent {
  return {
    seq: Number(row.seq),
    type: row.type,
    step_id: row.step_id,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
    at: iso(row.created_at),
  };
}

/** A run as callers see it, read in `tx`; 404 when there is none. */
export async function runView(store: RunStore, refs: StepRefs, tx: Tx, runId: string): Promise<Run> {
  const run = await store.findRun(tx, runId);
  if (!run) throw new NotFound('Run', runId);
  const [labels, checkpoints] = [await store.labelsOfRuns(tx, [runId]), await store.checkpointsOfRuns(tx, [runId])];
  const steps = await store.runSteps(tx, runId);
  return toRun(run, steps, labels.get(runId)!, checkpoints.get(runId), await refs.sign(steps, [run]));
}

/** Runs as callers see them: started, listed, cancelled and redriven; the engine moves them. */
export class RunService {
  /** The read of waiting steps that the events of this turn of the event loop share. */
  private waiterRead: Promise<{ run_id: string; step_id: string; wait_topic: string }[]> | null = null;
  private usage: RunUsage | null = null;

  constructor(
    private readonly deps: {
      runs: RunStore;
      limits: RunLimitsStore;
      plans: PlanStore;
      engine: RunEngine;
      clock: Clock;
      audit: AuditTrail;
      refs: StepRefs;
    },
  ) {}

  private get store() {
    return this.deps.runs;
  }

  async startRun(
    input: {
      plan_id: string;
      input?: Record<string, unknown>;
      adaptive?: Adaptive;
      tags?: string[];
      metadata?: Record<string, string>;
      priority?: number;
    },
    caller: Caller,
  ): Promise<Run> {
    return this.store.inTransaction(async (tx) => {
      const plan = await this.deps.plans.currentPlan(tx, input.plan_id);
      if (!plan) throw new NotFound('Plan', input.plan_id);
      const run = await this.deps.engine.start(tx, {
        planId: plan.id,
        planAlias: plan.alias,
        planVersion: plan.version,
        definition: plan.definition,
        definitionText: plan.text,
        input: input.input ?? {},
        adaptive: input.adaptive,
        priority: input.priority,
        createdBy: caller.agentId ?? caller.actor,
      });
      const labels = { tags: [...new Set(input.tags ?? [])].sort(), metadata: input.metadata ?? {} };
      await this.store.insertRunLabels(tx, run.id, labels);
      await this.deps.audit.record(tx, { action: 'run.start', resource: { type: 'run', id: run.id } });
      // The run as saved, with its steps from memory: no need to read back what was just written.
      const steps = await this.deps.engine.stepsOf(tx, run);
      return toRun(run, steps, labels, new Map(), await this.deps.refs.sign(steps, [run]));
    });
  }

  /** Where a run's answer takes its usage from (app.ts: the usage domain). */
  reportUsageWith(usage: RunUsage): void {
    this.usage = usage;
  }

  /** The run, with the usage reported for it and each of its steps. */
  async getRun(runId: string): Promise<Run> {
    const run = await runView(this.store, this.deps.refs, autocommit, runId);
    if (this.usage === null) return run;
    const { total, steps } = await this.usage.ofRun(autocommit, runId);
    const none = { count: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, cost_usd: 0 };
    return { ...run, usage: total, steps: run.steps.map((step) => ({ ...step, usage: steps.get(step.id) ?? none })) };
  }

  async listRuns(filter: RunListQuery, window: Page): Promise<Paged<Run>> {
    let planId = filter.plan_id;
    if (planId !== undefined) planId = (await this.deps.plans.findPlan(autocommit, planId))?.id ?? planId;
    const ms = (time: string | undefined) => (time === undefined ? undefined : Date.parse(time));
    const page = await this.store.listRuns(
      autocommit,
      {
        planId,
        status: filter.status,
        startedAfter: ms(filter.started_after),
        startedBefore: ms(filter.started_before),
        tag: filter.tag,
        metadata: filter.metadata === undefined ? undefined : metadataFilter(filter.metadata),
      },
      window,
    );
    const ids = page.items.map((run) => run.id);
    const [steps, labels, checkpoints] = [
      await this.store.stepsOfRuns(autocommit, ids),
      await this.store.labelsOfRuns(autocommit, ids),
      await this.store.checkpointsOfRuns(autocommit, ids),
    ];
    const signed = await this.deps.refs.sign([...steps.values()].flat(), page.items);
    const items = page.items.map((run) => toRun(run, steps.get(run.id)!, labels.get(run.id)!, checkpoints.get(run.id), signed));
    return { ...page, items };
  }

  /** 404 unknown; 403 unless `caller` started the run (its parent run, for a sub-plan's) or acts for the platform. */
  private async assertMayChangeRun(tx: Tx, runId: string, caller: Caller): Promise<void> {
    const run = await this.store.findRun(tx, runId);
    if (!run) throw new NotFound('Run', runId);
    assertMayChange(caller, { type: 'run', id: runId, createdBy: run.created_by });
  }

  async cancelRun(runId: string, caller: Caller, reason?: string): Promise<Run> {
    return this.store.inTransaction(async (tx) => {
      await this.assertMayChangeRun(tx, runId, caller);
      await this.deps.audit.record(tx, { action: 'run.cancel', resource: { type: 'run', id: runId } });
      await this.deps.engine.cancel(tx, runId, `cancelled by ${caller.agentId ?? caller.actor}`, { by: { actor: caller.actor, reason } });
      return runView(this.store, this.deps.refs, tx, runId);
    });
  }

  async redrive(runId: string, caller: Caller, reason?: string): Promise<Run> {
    return this.store.inTransaction(async (tx) => {
      await this.assertMayChangeRun(tx, runId, caller);
      await this.deps.audit.record(tx, { action: 'run.redrive', resource: { type: 'run', id: runId } });
      await this.deps.engine.redrive(tx, runId, { actor: caller.actor, name: caller.agentId ?? caller.actor, reason });
      return runView(this.store, this.deps.refs, tx, runId);
    });
  }

  async events(runId: string, window: Page): Promise<Paged<RunEvent>> {
    if (!(await this.store.findRun(autocommit, runId))) throw new NotFound('Run', runId);
    const page = await this.store.listEvents(autocommit, runId, window);
    return mapPage(page, toEvent);
  }

  // Engine plumbing

  async handleEvent(publication: Publication): Promise<void> {
    // Most events resume nothing: look before opening a transaction (and reading a large payload).
    const waiters = await this.waiters();
    if (!waiters.some((w) => topicMatches(w.wait_topic, publication.topic))) return;
    const event = await publication.event();
    await this.store.inTransaction((tx) => this.deps.engine.onEvent(tx, event));
  }

  /**
   * The steps waiting for events, read once for all the events handled in one turn of the
   * event loop (a burst of publishes): the read starts after every one of them was published,
   * so it sees every wait that began before any of them.
   */
  private waiters(): Promise<{ run_id: string; step_id: string; wait_topic: string }[]> {
    this.waiterRead ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.waiterRead = null;
      return this.store.eventWaiters(autocommit);
    });
    return this.waiterRead;
  }

  /** Steps waiting for an agent look again (discovery changed). */
  async agentsChanged(): Promise<void> {
    await this.store.inTransaction((tx) => this.deps.engine.onAgentsChanged(tx));
  }

  /** Advances runs whose timers are due; returns how many it advanced. */
  async wakeDue(batch = 100): Promise<number> {
    let advanced = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const count = await this.store.inTransaction(async (tx) => {
        const due = await this.store.claimDueRuns(tx, now, batch);
        for (const run of due) await this.deps.engine.wake(tx, run);
        return due.length;
      });
      advanced += count;
      if (count < batch) return advanced;
    }
  }

  /** Runs held back by why (the blocked runs gauge). */
  blockedCounts(): Promise<Record<string, number>> {
    return this.deps.limits.countBlocked(autocommit);
  }

  nextWakeAt(): Promise<number | null> {
    return this.store.nextWakeAt(autocommit);
  }
}
