import { randomBytes } from 'node:crypto';
import type { StepRefs } from './step-refs.js';
import type { Tx } from '../kernel/tx.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { Clock } from '../kernel/clock.js';
import { newId } from '../kernel/ids.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import { SYSTEM_ACTOR, type EventLog, type Inbox } from '../kernel/ports.js';
import { parseNullableJson } from '../kernel/json.js';
import { compilePlan } from './plan.js';
import type { CompiledPlan, PlanDefinition } from './plan-definition.js';
import type { ApprovalLinks } from './approval-links.js';
import type { ApprovalNotices } from './approval-notices.js';
import { approverMessagesOf, asksForHumans, countTransitions, logEventsOf } from './run-events.js';
import { NOT_STARTED, record, RUN_FINISHED, type RunContext, type StartRun, type StepState } from './run-state.js';
import type { NewRunEvent, RunRow, RunStepRow } from './run-list-store.js';
import type { RunStore } from './run-store.js';

/** Runs whose steps a node keeps after saving them (most transitions touch a recently saved run). */
const STEP_CACHE_RUNS = 2000;

/** The messages that runs about to be saved send, taken out of their outboxes. */
function outboxes(contexts: RunContext[]): RunContext['outbox'] {
  return contexts.flatMap((ctx) => ctx.outbox.splice(0));
}

/**
 * Runs in and out of memory for transitions: a new run, a run loaded (locked) from the store,
 * and the save that writes what a transition changed, with the step messages it sends.
 */
export class RunContexts {
  private readonly compiled = new BoundedMap<string, CompiledPlan>(1000);
  /**
   * The steps of recently saved runs, keyed by run id, valid while the run's `revision` still
   * matches: a revision is unique per save, so a rolled-back save or another node's save never
   * matches and the steps are read again.
   */
  private readonly savedSteps = new BoundedMap<string, { revision: string; rows: RunStepRow[] }>(STEP_CACHE_RUNS);
  private readonly revisionPrefix = randomBytes(8).toString('hex');
  private revisions = 0;

  constructor(
    private readonly deps: {
      store: RunStore;
      inbox: Inbox;
      clock: Clock;
      events: EventLog;
      links: ApprovalLinks;
      metrics: DomainMetrics;
      /** What human steps tell their notification channels. */
      notices: ApprovalNotices;
      /** Large step inputs and outputs by reference. */
      refs: StepRefs;
    },
  ) {}

  private get store() {
    return this.deps.store;
  }

  private compile(run: RunRow): CompiledPlan {
    return this.compiled.getOrCreate(`${run.plan_id}@${run.plan_version}`, () => compilePlan(JSON.parse(run.definition) as PlanDefinition));
  }

  private context(run: RunRow, rows: RunStepRow[], { isNew }: { isNew: boolean }): RunContext {
    const steps = new Map<string, StepState>();
    // New runs insert every row on save; otherwise the changed and added rows are written.
    for (const row of rows) steps.set(row.step_id, { row, dirty: false });
    return {
      run,
      plan: this.compile(run),
      steps,
      events: [],
      now: this.deps.clock.now(),
      isNew,
      initialWakeAt: run.wake_at,
      initialStatus: run.status,
      input: JSON.parse(run.input),
      event: parseNullableJson(run.event),
      failed: null,
      parentInMemory: false,
      outbox: [],
      actor: SYSTEM_ACTOR,
      reason: null,
    };
  }

  /** A new run of `spec` (a sub-plan's child of `parent`), its steps not started. */
  create(spec: StartRun, parent?: { run: RunRow; stepId: string }, traceparent: string | null = null): RunContext {
    const now = this.deps.clock.now();
    const run: RunRow = {
      id: newId('run', now),
      plan_id: spec.planId,
      plan_version: spec.planVersion,
      definition: spec.definitionText ?? JSON.stringify(spec.definition),
      status: 'running',
      input: JSON.stringify(spec.input),
      event: spec.event === undefined ? null : JSON.stringify(spec.event),
      output: null,
      error: null,
      adaptive: spec.adaptive ? JSON.stringify(spec.adaptive) : null,
      revisions: '[]',
      parent_run_id: parent?.run.id ?? null,
      parent_step_id: parent?.stepId ?? null,
      depth: parent ? parent.run.depth + 1 : 0,
      created_by: spec.createdBy,
      wake_at: null,
      revision: '',
      started_at: now,
      completed_at: null,
      updated_at: now,
      traceparent,
      retention_days: spec.definition.retention_days ?? null,
      // Set by the plan's limits (run-limits.ts) before the run is saved.
      priority: 0,
      concurrency_key: null,
      rate_key: null,
      blocked_by: null,
      admitted_at: null,
      rerun_of: spec.rerunOf ?? null,
      output_ref: null,
    };
    const rows = spec.definition.steps.map((def, position): RunStepRow => ({
      run_id: run.id,
      step_id: def.id,
      position,
      parent_step_id: null,
      item_index: -1,
      item: null,
      ...NOT_STARTED,
    }));
    const ctx = this.context(run, rows, { isNew: true });
    ctx.parentInMemory = parent !== undefined;
    ctx.actor = spec.createdBy;
    record(ctx, 'run.started', null, { plan_id: run.plan_id, plan_version: run.plan_version });
    return ctx;
  }

  /** A run the caller has read (and locked), with its steps. */
  async fromRow(tx: Tx, run: RunRow): Promise<RunContext> {
    return this.context(run, await this.steps(tx, run), { isNew: false });
  }

  /** Loads a run for a transition, locked (PostgreSQL) until the transaction ends. */
  /** Loads a run for a transition, locked until `tx` ends; `lock: false` only to look at it. */
  async load(tx: Tx, runId: string, { lock = true }: { lock?: boolean } = {}): Promise<RunContext | null> {
    const run = await this.store.findRun(tx, runId, { lock });
    if (!run) return null;
    return this.fromRow(tx, run);
  }

  /** Loads several runs for transitions, locked in id order (as one read) until the transaction ends. */
  async loadMany(tx: Tx, runIds: string[]): Promise<RunContext[]> {
    // One run (a single acknowledgement, the usual case) takes the lookup compiled once.
    if (runIds.length === 1) {
      const ctx = await this.load(tx, runIds[0]!);
      return ctx ? [ctx] : [];
    }
    const runs = await this.store.findRuns(tx, runIds, { lock: true });
    const missing = runs.filter((run) => this.savedSteps.get(run.id)?.revision !== run.revision).map((run) => run.id);
    const read = missing.length > 0 ? await this.store.stepsOfRuns(tx, missing) : null;
    return runs.map((run) =>
      this.context(run, read?.get(run.id) ?? this.savedSteps.get(run.id)!.rows.map((row) => ({ ...row })), { isNew: false }),
    );
  }

  /** The steps of `run` in plan order (position, then item): from memory when this node saved it last. */
  async stepsOf(tx: Tx, run: RunRow): Promise<RunStepRow[]> {
    const rows = await this.steps(tx, run);
    return rows.sort((a, b) => a.position - b.position || a.item_index - b.item_index);
  }

  private async steps(tx: Tx, run: RunRow): Promise<RunStepRow[]> {
    const saved = this.savedSteps.get(run.id);
    if (saved?.revision === run.revision) return saved.rows.map((row) => ({ ...row }));
    return this.store.runSteps(tx, run.id);
  }

  private remember(ctx: RunContext): void {
    const { id, revision, status } = ctx.run;
    this.savedSteps.delete(id);
    if (RUN_FINISHED.has(status)) return;
    this.savedSteps.set(id, { revision, rows: [...ctx.steps.values()].map((s) => ({ ...s.row })) });
  }

  /**
   * Saves transitions: their messages in one insert, then new runs in one statement per table
   * and loaded runs' changed rows in one write, then their events in the log (last: on
   * PostgreSQL the log's lock is held from there to the commit); every saved run's steps are
   * remembered.
   */
  async save(tx: Tx, contexts: RunContext[]): Promise<void> {
    await this.send(tx, outboxes(contexts));
    await this.deps.refs.offloadOutputs(tx, contexts);
    const created = contexts.filter((ctx) => ctx.isNew);
    const moved = contexts.filter((ctx) => !ctx.isNew);
    if (created.length > 0) {
      const runs: RunRow[] = [];
      const steps: RunStepRow[] = [];
      const events: NewRunEvent[] = [];
      for (const ctx of created) {
        ctx.run.revision = this.nextRevision();
        runs.push(ctx.run);
        for (const step of ctx.steps.values()) steps.push(step.row);
        for (const event of ctx.events) events.push(event);
      }
      await this.store.insertRuns(tx, { runs, steps, events });
    }
    if (moved.length > 0) {
      const transitions = moved.map((ctx) => {
        ctx.run.revision = this.nextRevision();
        ctx.run.updated_at = ctx.now;
        const steps: RunStepRow[] = [];
        for (const step of ctx.steps.values()) if (step.dirty) steps.push(step.row);
        return { run: ctx.run, steps, events: ctx.events };
      });
      await this.store.saveTransitions(tx, transitions);
    }
    // Human steps that started waiting: links in their events, and messages to their approvers.
    const link = contexts.some(asksForHumans) ? await this.deps.links.linker() : null;
    if (link) {
      const messages = contexts.flatMap((ctx) => approverMessagesOf(ctx, link));
      if (messages.length > 0) await this.deps.inbox.send({ tx, messages });
    }
    await this.deps.notices.saved(tx, contexts, link);
    await this.deps.events.append(tx, ...contexts.flatMap((ctx) => logEventsOf(ctx, link)));
    countTransitions(this.deps.metrics, contexts);
    for (const ctx of contexts) this.remember(ctx);
  }

  /** Sends the step messages in `outbox` (emptying it) and sets their steps' `message_id`. */
  async send(tx: Tx, outbox: RunContext['outbox']): Promise<void> {
    if (outbox.length === 0) return;
    const pending = outbox.splice(0);
    await this.deps.refs.offloadInputs(tx, pending);
    const { messages: sent } = await this.deps.inbox.send({ tx, messages: pending.map((p) => p.message) });
    pending.forEach(({ step }, i) => (step.row.message_id = sent[i]!.message_id));
  }

  private nextRevision(): string {
    return `${this.revisionPrefix}.${++this.revisions}`;
  }
}
