import { randomBytes } from 'node:crypto';
import jsonata from 'jsonata';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import type { AgentDirectory, Inbox, MessageOutcome, OutgoingMessage, PublishedEvent } from '../kernel/ports.js';
import { topicMatches } from '../messaging/topics.js';
import {
  asList,
  compilePlan,
  DEFAULT_MAX_CONCURRENCY,
  DEFAULT_STEP_TIMEOUT_S,
  inputValidator,
  type CompiledPlan,
  type PlanDefinition,
  type StepTemplate,
} from './plan.js';
import type { CoordinationStore, NewRunEvent, RunRow, RunStepRow } from './store.js';
import type { RunStatus, StepStatus } from './tables.js';
import { render, TemplateError, type TemplateScope } from './templates.js';
import { isJsonObject, parseNullableJson } from '../kernel/json.js';

export const PLAN_STEP_ORIGIN = 'plan_step';
export const PLAN_STEP_EVENT = 'plan.step.execute';
/** Wakes every node's run timer when a run gets an earlier timer. */
export const COORDINATION_CHANGED = 'coordination:changed';
const PLATFORM_SENDER = 'switchboard';
/** sub_plan nesting beyond this fails the step (a plan that starts itself would never end). */
const MAX_DEPTH = 10;
const MAX_ITEMS = 1000;
const MAX_BACKOFF_S = 3600;
const DEFAULT_MAX_REVISIONS = 3;
/** Runs whose steps a node keeps after saving them (most transitions touch a recently saved run). */
const STEP_CACHE_RUNS = 2000;

const FINISHED: ReadonlySet<StepStatus> = new Set(['completed', 'failed', 'skipped', 'cancelled']);
const IN_FLIGHT: ReadonlySet<StepStatus> = new Set(['running', 'waiting']);
export const RUN_FINISHED: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);

export interface Adaptive {
  enabled: boolean;
  max_revisions?: number;
}

export interface Revision {
  step: string;
  reason: string;
  change: Record<string, unknown>;
  at: string;
}

/** What a step remembers between transitions (JSON in run_steps.detail). */
interface StepDetail {
  /** Agents this step was sent to, for adaptive re-routing. */
  tried?: string[];
  /** The agent a revision chose for the next attempt. */
  route_to?: string;
  /** Attempts made before the last revision (the retry budget restarts after one). */
  attempt_base?: number;
  /** wait on an event: the resolved match object. */
  match?: Record<string, unknown>;
}

interface StepState {
  row: RunStepRow;
  dirty: boolean;
  output?: unknown;
  detail?: StepDetail;
}

/** One run loaded for a transition: the run row, its steps and what the transition changes. */
interface RunContext {
  run: RunRow;
  plan: CompiledPlan;
  steps: Map<string, StepState>;
  events: NewRunEvent[];
  now: number;
  isNew: boolean;
  initialWakeAt: number | null;
  initialStatus: RunStatus;
  input: unknown;
  event: unknown;
  /** The first step that failed in this transition (a failed step fails the run). */
  failed: StepState | null;
  /** Set while a parent run is itself in memory (start or cancel of a child): it reads the outcome directly. */
  parentInMemory: boolean;
  /**
   * The step messages this transition sends, sent together when it is saved (one insert for
   * all, and for all the runs of a batch); a step's `message_id` is set then.
   */
  outbox: { message: OutgoingMessage; step: StepState }[];
}

export interface StartRun {
  planId: string;
  planVersion: number;
  definition: PlanDefinition;
  /** The definition as stored with its plan version, when the caller has it (saves serializing it again). */
  definitionText?: string;
  input: Record<string, unknown>;
  event?: unknown;
  adaptive?: Adaptive;
  createdBy: string;
}

export interface EngineDeps {
  store: CoordinationStore;
  inbox: Inbox;
  directory: AgentDirectory;
  clock: Clock;
  notifier: Notifier;
  logger: Logger;
  /** When this node's timer worker looks next (0 while it is running a pass). */
  timerPlannedAt: () => number;
}

/** The state of a step that has not started: a new step, a for_each item, a redriven step. */
const NOT_STARTED = {
  status: 'pending',
  attempt: 0,
  agent_id: null,
  capability: null,
  message_id: null,
  child_run_id: null,
  input: null,
  output: null,
  error: null,
  wake_at: null,
  wait_topic: null,
  detail: '{}',
  started_at: null,
  completed_at: null,
} as const satisfies Partial<RunStepRow>;

/** A step cannot proceed with the run's data (an expression, a template value): the step fails, not the request. */
class StepError extends Error {}

/** The messages that runs about to be saved send, taken out of their outboxes. */
function outboxes(contexts: RunContext[]): RunContext['outbox'] {
  return contexts.flatMap((ctx) => ctx.outbox.splice(0));
}

/** True when every field of `match` equals the same field of `value` (recursively for objects). */
function matches(match: unknown, value: unknown): boolean {
  if (isJsonObject(match)) return isJsonObject(value) && Object.entries(match).every(([k, v]) => matches(v, value[k]));
  return JSON.stringify(match) === JSON.stringify(value);
}

/**
 * The run engine (design §4, §5): every transition loads the run under a lock, moves its steps,
 * starts whatever became ready, and commits with the messages it sends, so a crash never
 * loses or repeats a step. Callers pass the transaction; one transition never spans two.
 */
export class RunEngine {
  private readonly compiled = new BoundedMap<string, CompiledPlan>(1000);
  /**
   * The steps of recently saved runs, keyed by run id, valid while the run's `revision` still
   * matches: a revision is unique per save, so a rolled-back save or another node's save never
   * matches and the steps are read again.
   */
  private readonly savedSteps = new BoundedMap<string, { revision: string; rows: RunStepRow[] }>(STEP_CACHE_RUNS);
  private readonly revisionPrefix = randomBytes(8).toString('hex');
  private revisions = 0;

  constructor(private readonly deps: EngineDeps) {}

  private get store() {
    return this.deps.store;
  }

  // ── Loading and saving ──────────────────────────────────────────────────────────────

  private compile(run: RunRow): CompiledPlan {
    return this.compiled.getOrCreate(`${run.plan_id}@${run.plan_version}`, () => compilePlan(JSON.parse(run.definition) as PlanDefinition));
  }

  private context(run: RunRow, rows: RunStepRow[], isNew: boolean): RunContext {
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
    };
  }

  /** Loads a run for a transition, locked (PostgreSQL) until the transaction ends. */
  private async load(trx: Db, runId: string): Promise<RunContext | null> {
    const run = await this.store.findRun(runId, trx, true);
    if (!run) return null;
    return this.context(run, await this.steps(trx, run), false);
  }

  /** Loads several runs for transitions, locked in id order (as one read) until the transaction ends. */
  private async loadMany(trx: Db, runIds: string[]): Promise<RunContext[]> {
    // One run (a single acknowledgement, the usual case) takes the lookup compiled once.
    if (runIds.length === 1) {
      const ctx = await this.load(trx, runIds[0]!);
      return ctx ? [ctx] : [];
    }
    const runs = await this.store.findRuns(runIds, trx, true);
    const missing = runs.filter((run) => this.savedSteps.get(run.id)?.revision !== run.revision).map((run) => run.id);
    const read = missing.length > 0 ? await this.store.stepsOfRuns(missing, trx) : null;
    return runs.map((run) => this.context(run, read?.get(run.id) ?? this.savedSteps.get(run.id)!.rows.map((row) => ({ ...row })), false));
  }

  /** The steps of `run` in plan order (position, then item): from memory when this node saved it last. */
  async stepsOf(trx: Db, run: RunRow): Promise<RunStepRow[]> {
    const rows = await this.steps(trx, run);
    return rows.sort((a, b) => a.position - b.position || a.item_index - b.item_index);
  }

  private async steps(trx: Db, run: RunRow): Promise<RunStepRow[]> {
    const saved = this.savedSteps.get(run.id);
    if (saved?.revision === run.revision) return saved.rows.map((row) => ({ ...row }));
    return this.store.runSteps(run.id, trx);
  }

  private remember(ctx: RunContext): void {
    const { id, revision, status } = ctx.run;
    this.savedSteps.delete(id);
    if (RUN_FINISHED.has(status)) return;
    this.savedSteps.set(id, { revision, rows: [...ctx.steps.values()].map((s) => ({ ...s.row })) });
  }

  private async save(trx: Db, ctx: RunContext): Promise<void> {
    return ctx.isNew ? this.saveNew(trx, [ctx]) : this.saveMany(trx, [ctx]);
  }

  /** Saves transitions of loaded runs: their messages in one insert, their rows in one write. */
  private async saveMany(trx: Db, contexts: RunContext[]): Promise<void> {
    if (contexts.length === 0) return;
    await this.send(trx, outboxes(contexts));
    const transitions = contexts.map((ctx) => {
      ctx.run.revision = this.nextRevision();
      ctx.run.updated_at = ctx.now;
      const steps: RunStepRow[] = [];
      for (const step of ctx.steps.values()) if (step.dirty) steps.push(step.row);
      return { run: ctx.run, steps, events: ctx.events };
    });
    await this.store.saveTransitions(trx, transitions);
    await this.saved(trx, contexts);
  }

  /** Inserts new runs (one statement per table for all of them), then what follows any save. */
  private async saveNew(trx: Db, contexts: RunContext[]): Promise<void> {
    await this.send(trx, outboxes(contexts));
    const runs: RunRow[] = [];
    const steps: RunStepRow[] = [];
    const events: NewRunEvent[] = [];
    for (const ctx of contexts) {
      ctx.run.revision = this.nextRevision();
      runs.push(ctx.run);
      for (const step of ctx.steps.values()) steps.push(step.row);
      for (const event of ctx.events) events.push(event);
    }
    await this.store.insertRuns(trx, { runs, steps, events });
    await this.saved(trx, contexts);
  }

  /** Sends the step messages in `outbox` (emptying it) and sets their steps' `message_id`. */
  private async send(trx: Db, outbox: RunContext['outbox']): Promise<void> {
    if (outbox.length === 0) return;
    const pending = outbox.splice(0);
    const sent = await this.deps.inbox.sendMany(
      pending.map((p) => p.message),
      trx,
    );
    pending.forEach(({ step }, i) => (step.row.message_id = sent[i]!.message_id));
  }

  private nextRevision(): string {
    return `${this.revisionPrefix}.${++this.revisions}`;
  }

  /**
   * What follows a save: every saved run's steps are remembered first, so a parent that was
   * saved in the same batch as its finishing child is read back as saved.
   */
  private async saved(trx: Db, contexts: RunContext[]): Promise<void> {
    for (const ctx of contexts) this.remember(ctx);
    let wakeTimers = false;
    for (const ctx of contexts) {
      const { run } = ctx;
      // Only a timer earlier than the worker's next look needs a wake-up; the worker on this node
      // sees the rest in time (another node's worker, if this one dies, within its longest sleep).
      // While a pass is under way (0) it may have read the timers before this commit and would
      // then sleep past this one, so it is woken again.
      const planned = this.deps.timerPlannedAt();
      if (run.wake_at !== null && (planned === 0 || run.wake_at < planned) && (ctx.initialWakeAt === null || run.wake_at < ctx.initialWakeAt)) {
        wakeTimers = true;
      }
      if (RUN_FINISHED.has(run.status) && !RUN_FINISHED.has(ctx.initialStatus) && run.parent_run_id && !ctx.parentInMemory) {
        await this.childFinished(trx, run);
      }
    }
    if (wakeTimers) await this.deps.notifier.notify(COORDINATION_CHANGED, '', trx);
  }

  private record(ctx: RunContext, type: string, stepId: string | null, detail: Record<string, unknown> = {}): void {
    ctx.events.push({ run_id: ctx.run.id, step_id: stepId, type, detail: JSON.stringify(detail), created_at: ctx.now });
  }

  private change(step: StepState, changes: Partial<RunStepRow>): void {
    Object.assign(step.row, changes);
    step.dirty = true;
    if ('output' in changes) step.output = undefined;
    if ('detail' in changes) step.detail = undefined;
  }

  private output(step: StepState): unknown {
    if (step.output === undefined) step.output = parseNullableJson(step.row.output);
    return step.output;
  }

  private detail(step: StepState): StepDetail {
    step.detail ??= JSON.parse(step.row.detail) as StepDetail;
    return step.detail;
  }

  private setDetail(step: StepState, detail: StepDetail): void {
    this.change(step, { detail: JSON.stringify(detail) });
  }

  // ── Entry points (each inside the caller's transaction) ─────────────────────────────

  /** Creates a run and starts its first steps; returns the saved run row. */
  async start(trx: Db, spec: StartRun, parent?: { run: RunRow; stepId: string }): Promise<RunRow> {
    const ctx = this.newRun(spec, parent);
    await this.advance(trx, ctx);
    await this.save(trx, ctx);
    return ctx.run;
  }

  /**
   * Creates several runs and starts their first steps (triggered runs of one batch of events):
   * each run advances as `start` would, then they are inserted together. Returns their rows.
   */
  async startMany(trx: Db, specs: StartRun[]): Promise<RunRow[]> {
    const contexts: RunContext[] = [];
    for (const spec of specs) {
      const ctx = this.newRun(spec);
      await this.advance(trx, ctx);
      contexts.push(ctx);
    }
    if (contexts.length > 0) await this.saveNew(trx, contexts);
    return contexts.map((ctx) => ctx.run);
  }

  private newRun(spec: StartRun, parent?: { run: RunRow; stepId: string }): RunContext {
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
    };
    const rows = spec.definition.steps.map(
      (def, position): RunStepRow => ({ run_id: run.id, step_id: def.id, position, parent_step_id: null, item_index: -1, item: null, ...NOT_STARTED }),
    );
    const ctx = this.context(run, rows, true);
    ctx.parentInMemory = parent !== undefined;
    this.record(ctx, 'run.started', null, { plan_id: run.plan_id, plan_version: run.plan_version });
    return ctx;
  }

  /**
   * Messaging's outcome handler: agent steps' messages were acknowledged or dead-lettered. A
   * batch (one batch acknowledgement) loads its runs in one locked read and saves them in one
   * write (on PostgreSQL), instead of a few round trips per message.
   */
  async onOutcomes(outcomes: MessageOutcome[], trx: Db): Promise<void> {
    const byRun = new Map<string, MessageOutcome[]>();
    for (const outcome of outcomes) {
      if (outcome.status === 'delivered') continue;
      const runId = outcome.origin.ref.slice(0, outcome.origin.ref.indexOf('|'));
      let list = byRun.get(runId);
      if (!list) byRun.set(runId, (list = []));
      list.push(outcome);
    }
    if (byRun.size === 0) return;
    const moved: RunContext[] = [];
    for (const ctx of await this.loadMany(trx, [...byRun.keys()])) {
      let changed = false;
      for (const outcome of byRun.get(ctx.run.id)!) {
        const [, stepId, attempt] = outcome.origin.ref.split('|');
        const step = ctx.steps.get(stepId!);
        // An outcome for an attempt the run has moved past (timed out, cancelled) changes nothing.
        if (!step || step.row.status !== 'running' || String(step.row.attempt) !== attempt || step.row.message_id !== outcome.message_id) continue;
        if (outcome.status === 'acknowledged') this.complete(ctx, step, outcome.output ?? {});
        else await this.failAttempt(trx, ctx, step, outcome.reason ?? 'dead-lettered');
        await this.advance(trx, ctx);
        changed = true;
      }
      if (changed) moved.push(ctx);
    }
    await this.saveMany(trx, moved);
  }

  /** Advances a run whose timer is due (the worker claimed it). */
  async wake(trx: Db, run: RunRow): Promise<void> {
    const ctx = this.context(run, await this.steps(trx, run), false);
    await this.advance(trx, ctx);
    await this.save(trx, ctx);
  }

  private async mustLoad(trx: Db, runId: string): Promise<RunContext> {
    const ctx = await this.load(trx, runId);
    if (!ctx) throw new NotFound('Run', runId);
    return ctx;
  }

  private humanStep(ctx: RunContext, stepId: string, type: 'human_approval' | 'human_input'): { step: StepState; def: StepTemplate } {
    const step = ctx.steps.get(stepId);
    if (!step) throw new NotFound('Step', stepId);
    const def = this.definition(ctx, step);
    if (def.type !== type) throw new Conflict(`Step '${stepId}' is a ${def.type} step, not ${type}`);
    if (step.row.status !== 'waiting') throw new Conflict(`Step '${stepId}' is ${step.row.status}, not waiting`);
    return { step, def };
  }

  async approve(
    trx: Db,
    runId: string,
    stepId: string,
    decision: { approved: boolean; comment?: string },
    by: { actor: string; agentId: string | null; admin: boolean },
  ): Promise<void> {
    const ctx = await this.mustLoad(trx, runId);
    const { step, def } = this.humanStep(ctx, stepId, 'human_approval');
    if (def.approvers && def.approvers.length > 0 && !by.admin && !def.approvers.includes(by.agentId ?? by.actor)) {
      throw new Forbidden(`Only ${def.approvers.join(', ')} may decide step '${stepId}'`);
    }
    this.decide(ctx, step, decision.approved, decision.comment ?? null, by.agentId ?? by.actor);
    await this.advance(trx, ctx);
    await this.save(trx, ctx);
  }

  private decide(ctx: RunContext, step: StepState, approved: boolean, comment: string | null, decidedBy: string): void {
    const output = { approved, comment, decided_by: decidedBy, decided_at: iso(ctx.now) };
    this.record(ctx, approved ? 'step.approved' : 'step.rejected', step.row.step_id, { decided_by: decidedBy, comment });
    if (approved) this.complete(ctx, step, output);
    else this.fail(ctx, step, `rejected by ${decidedBy}${comment ? `: ${comment}` : ''}`, output);
  }

  async submitInput(trx: Db, runId: string, stepId: string, data: Record<string, unknown>, by: string): Promise<void> {
    const ctx = await this.mustLoad(trx, runId);
    const { step, def } = this.humanStep(ctx, stepId, 'human_input');
    const validate = inputValidator(def.schema ?? {});
    if (!validate(data)) {
      const details = (validate.errors ?? []).map((e) => ({ field: `data${e.instancePath.replaceAll('/', '.')}`, message: e.message ?? 'is invalid' }));
      throw new InvalidRequest('data does not match the step schema', details);
    }
    this.record(ctx, 'step.input_received', stepId, { by });
    this.complete(ctx, step, data);
    await this.advance(trx, ctx);
    await this.save(trx, ctx);
  }

  /** Cancels a running or waiting run, its in-flight steps and their child runs. */
  async cancel(trx: Db, runId: string, reason: string, fromParent = false): Promise<RunRow> {
    const ctx = await this.mustLoad(trx, runId);
    if (RUN_FINISHED.has(ctx.run.status)) {
      if (fromParent) return ctx.run;
      throw new Conflict(`Run '${runId}' is already ${ctx.run.status}`);
    }
    ctx.parentInMemory = fromParent;
    for (const step of ctx.steps.values()) {
      if (FINISHED.has(step.row.status)) continue;
      await this.withdraw(trx, ctx, step, reason);
      this.change(step, { status: 'cancelled', wake_at: null, wait_topic: null, completed_at: ctx.now });
      this.record(ctx, 'step.cancelled', step.row.step_id, { reason });
    }
    this.finish(ctx, 'cancelled', null, reason);
    await this.save(trx, ctx);
    return ctx.run;
  }

  /** Restarts a failed run from its failed and cancelled steps; completed ones keep their output. */
  async redrive(trx: Db, runId: string, by: string): Promise<void> {
    const ctx = await this.mustLoad(trx, runId);
    if (ctx.run.status !== 'failed') throw new Conflict(`Run '${runId}' is ${ctx.run.status}; only failed runs can be redriven`);
    const restarted: string[] = [];
    for (const step of ctx.steps.values()) {
      if (step.row.status !== 'failed' && step.row.status !== 'cancelled') continue;
      restarted.push(step.row.step_id);
      const { tried } = this.detail(step);
      this.change(step, {
        ...NOT_STARTED,
        detail: JSON.stringify(tried ? { tried } : {}),
      });
    }
    Object.assign(ctx.run, { status: 'running', error: null, output: null, completed_at: null });
    this.record(ctx, 'run.redriven', null, { by, steps: restarted });
    await this.advance(trx, ctx);
    await this.save(trx, ctx);
  }

  /** A published event: completes the wait steps whose topic and match it satisfies. */
  async onEvent(trx: Db, event: PublishedEvent): Promise<number> {
    const waiters = (await this.store.eventWaiters(trx)).filter((w) => topicMatches(w.wait_topic, event.topic));
    let resumed = 0;
    for (const runId of new Set(waiters.map((w) => w.run_id))) {
      const ctx = await this.load(trx, runId);
      if (!ctx) continue;
      let changed = false;
      for (const waiter of waiters.filter((w) => w.run_id === runId)) {
        const step = ctx.steps.get(waiter.step_id);
        if (!step || step.row.status !== 'running' || step.row.wait_topic === null) continue;
        const { match } = this.detail(step);
        if (match !== undefined && !matches(match, event.payload)) continue;
        this.complete(ctx, step, { topic: event.topic, payload: event.payload, published_at: event.published_at, publisher: event.publisher });
        changed = true;
        resumed++;
      }
      if (!changed) continue;
      await this.advance(trx, ctx);
      await this.save(trx, ctx);
    }
    return resumed;
  }

  /** A child run (sub_plan) finished: its parent step completes or fails with it. */
  private async childFinished(trx: Db, child: RunRow): Promise<void> {
    const ctx = await this.load(trx, child.parent_run_id!);
    const step = ctx?.steps.get(child.parent_step_id!);
    if (!ctx || !step || step.row.status !== 'running' || step.row.child_run_id !== child.id) return;
    this.childOutcome(ctx, step, child);
    await this.advance(trx, ctx);
    await this.save(trx, ctx);
  }

  private childOutcome(ctx: RunContext, step: StepState, child: RunRow): void {
    if (child.status === 'completed') this.complete(ctx, step, parseNullableJson(child.output) ?? {});
    else if (child.status === 'failed') this.fail(ctx, step, `sub-plan run ${child.id} failed: ${child.error ?? 'unknown error'}`);
    else if (child.status === 'cancelled') this.fail(ctx, step, `sub-plan run ${child.id} was cancelled`);
  }

  // ── The transition loop ─────────────────────────────────────────────────────────────

  /** Fires due timers, starts ready steps and settles groups until nothing moves; then the run status. */
  private async advance(trx: Db, ctx: RunContext): Promise<void> {
    if (RUN_FINISHED.has(ctx.run.status)) return;
    for (let moved = true; moved && !ctx.failed; ) {
      moved = false;
      const active = this.activeMembers(ctx);
      for (const step of [...ctx.steps.values()]) {
        if (ctx.failed) break;
        const { status, wake_at } = step.row;
        if (IN_FLIGHT.has(status) && wake_at !== null && wake_at <= ctx.now) {
          await this.onTimer(trx, ctx, step);
          moved = true;
        } else if (status === 'pending') {
          const readiness = this.readiness(ctx, step, active);
          if (readiness === 'skip') {
            this.skip(ctx, step, 'every step it depends on was skipped');
            moved = true;
          } else if (readiness === 'start') {
            await this.startStep(trx, ctx, step);
            const group = step.row.parent_step_id;
            if (group !== null && IN_FLIGHT.has(step.row.status)) active.set(group, (active.get(group) ?? 0) + 1);
            moved = true;
          }
        } else if (status === 'running' && this.definition(ctx, step).type === 'parallel') {
          moved = this.settleGroup(ctx, step) || moved;
        }
      }
    }
    await this.settleRun(trx, ctx);
  }

  /** In-flight for_each items per group step (max_concurrency). */
  private activeMembers(ctx: RunContext): Map<string, number> {
    const active = new Map<string, number>();
    for (const s of ctx.steps.values()) {
      const group = s.row.parent_step_id;
      if (group !== null && IN_FLIGHT.has(s.row.status)) active.set(group, (active.get(group) ?? 0) + 1);
    }
    return active;
  }

  private definition(ctx: RunContext, step: StepState): StepTemplate {
    if (step.row.parent_step_id !== null) return ctx.plan.steps.get(step.row.parent_step_id)!.def.step!;
    return ctx.plan.steps.get(step.row.step_id)!.def;
  }

  private readiness(ctx: RunContext, step: StepState, active: Map<string, number>): 'start' | 'skip' | 'wait' {
    if (step.row.wake_at !== null && step.row.wake_at > ctx.now) return 'wait';
    const status = (id: string) => ctx.steps.get(id)!.row.status;
    if (step.row.parent_step_id !== null) {
      const parent = ctx.steps.get(step.row.parent_step_id)!;
      if (parent.row.status !== 'running') return 'wait';
      const limit = ctx.plan.steps.get(parent.row.step_id)!.def.max_concurrency ?? DEFAULT_MAX_CONCURRENCY;
      return (active.get(parent.row.step_id) ?? 0) < limit ? 'start' : 'wait';
    }
    const compiled = ctx.plan.steps.get(step.row.step_id)!;
    if (compiled.group !== null) {
      const group = status(compiled.group);
      if (group === 'skipped') return 'skip';
      if (group !== 'running') return 'wait';
    }
    if (compiled.deps.length === 0) return 'start';
    let skipped = 0;
    for (const dep of compiled.deps) {
      const s = status(dep);
      if (s === 'skipped') skipped++;
      else if (s !== 'completed') return 'wait';
    }
    return skipped === compiled.deps.length ? 'skip' : 'start';
  }

  private scope(ctx: RunContext, item: string | null): TemplateScope {
    const steps: Record<string, { output: unknown }> = {};
    for (const s of ctx.steps.values()) {
      if (s.row.parent_step_id !== null) continue;
      if (s.row.status === 'completed') steps[s.row.step_id] = { output: this.output(s) };
      else if (s.row.status === 'skipped') steps[s.row.step_id] = { output: null };
    }
    const scope: TemplateScope = { input: ctx.input, steps, event: ctx.event ?? {} };
    if (item !== null) scope.item = JSON.parse(item);
    return scope;
  }

  private async evaluate(expression: string, scope: TemplateScope): Promise<unknown> {
    try {
      return await jsonata(expression).evaluate({ input: scope.input, steps: scope.steps, event: scope.event, item: scope.item });
    } catch (err) {
      // JSONata throws plain objects with a message.
      throw new StepError(`expression failed: ${(err as { message?: string }).message ?? String(err)}`);
    }
  }

  private async startStep(trx: Db, ctx: RunContext, step: StepState): Promise<void> {
    const def = this.definition(ctx, step);
    const id = step.row.step_id;
    this.change(step, { status: 'running', attempt: step.row.attempt + 1, started_at: ctx.now, wake_at: null, error: null });
    const scope = this.scope(ctx, step.row.item);
    const eventsBefore = ctx.events.length;
    try {
      switch (def.type) {
        case 'agent':
          return await this.startAgent(trx, ctx, step, def, scope);
        case 'human_approval':
        case 'human_input': {
          const input = { prompt: render(def.prompt, scope), ...(def.type === 'human_input' ? { schema: def.schema } : { approvers: def.approvers ?? [] }) };
          const timeout = def.type === 'human_approval' && def.timeout_seconds !== undefined ? ctx.now + def.timeout_seconds * 1000 : null;
          this.change(step, { status: 'waiting', input: JSON.stringify(input), wake_at: timeout });
          this.record(ctx, 'step.waiting', id, { type: def.type });
          return;
        }
        case 'condition': {
          const result = Boolean(await this.evaluate(def.expression!, scope));
          this.record(ctx, 'step.started', id, { attempt: step.row.attempt });
          this.complete(ctx, step, { result, branch: result ? 'then' : 'else' });
          for (const target of asList(result ? def.else : def.then)) {
            const other = ctx.steps.get(target)!;
            if (other.row.status === 'pending') this.skip(ctx, other, `condition '${id}' took the ${result ? 'then' : 'else'} branch`);
          }
          return;
        }
        case 'transform': {
          const output = def.expression !== undefined ? await this.evaluate(def.expression, scope) : render(def.output, scope);
          this.record(ctx, 'step.started', id, { attempt: step.row.attempt });
          this.complete(ctx, step, output ?? null);
          return;
        }
        case 'wait':
          return this.startWait(ctx, step, def, scope);
        case 'sub_plan':
          return await this.startSubPlan(trx, ctx, step, def, scope);
        case 'parallel':
          this.record(ctx, 'step.started', id, { attempt: step.row.attempt });
          if (def.for_each !== undefined) this.expand(ctx, step, def, scope);
          return;
      }
    } catch (err) {
      // Expressions and templates fail on the run's data, not on the server: the step fails.
      if (!(err instanceof StepError || err instanceof TemplateError)) throw err;
      // Some types announce the start before they evaluate anything: the timeline shows it once.
      const announced = ctx.events.slice(eventsBefore).some((e) => e.type === 'step.started' && e.step_id === id);
      if (!announced) this.record(ctx, 'step.started', id, { attempt: step.row.attempt });
      this.fail(ctx, step, err.message);
    }
  }

  private async startAgent(trx: Db, ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): Promise<void> {
    const detail = { ...this.detail(step) };
    const input = (render(def.input ?? {}, scope) ?? {}) as Record<string, unknown>;
    let agent = detail.route_to ?? def.agent ?? null;
    if (agent === null) {
      const [first] = await this.deps.directory.lookup({ capability: def.capability!, strategy: def.strategy, limit: 1 }, trx);
      agent = first?.agent_id ?? null;
    }
    this.change(step, { input: JSON.stringify(input) });
    this.record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt, agent });
    if (agent === null) {
      await this.failAttempt(trx, ctx, step, `no healthy agent offers capability '${def.capability}'`);
      return;
    }
    // Sent when the transition is saved (with the other messages it sends), which sets message_id.
    ctx.outbox.push({
      step,
      message: {
        source: PLATFORM_SENDER,
        destination: agent,
        event_name: PLAN_STEP_EVENT,
        payload: { run_id: ctx.run.id, step_id: step.row.step_id, plan_id: ctx.run.plan_id, input },
        origin: { kind: PLAN_STEP_ORIGIN, ref: `${ctx.run.id}|${step.row.step_id}|${step.row.attempt}` },
      },
    });
    detail.tried = [...new Set([...(detail.tried ?? []), agent])];
    delete detail.route_to;
    this.setDetail(step, detail);
    this.change(step, {
      agent_id: agent,
      capability: def.capability ?? null,
      message_id: null,
      wake_at: ctx.now + (def.timeout_seconds ?? DEFAULT_STEP_TIMEOUT_S) * 1000,
    });
  }

  private startWait(ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): void {
    this.record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt });
    if (def.event !== undefined) {
      const match = def.event.match === undefined ? undefined : (render(def.event.match, scope) as Record<string, unknown>);
      this.setDetail(step, match === undefined ? {} : { match });
      this.change(step, { wait_topic: def.event.topic, input: JSON.stringify({ topic: def.event.topic, match: match ?? null }) });
      return;
    }
    let until: number;
    if (def.seconds !== undefined) until = ctx.now + def.seconds * 1000;
    else {
      const text = render(def.until, scope);
      until = typeof text === 'string' ? Date.parse(text) : Number.NaN;
      if (Number.isNaN(until)) throw new StepError(`until '${String(text)}' is not an ISO 8601 time`);
    }
    this.change(step, { wake_at: until, input: JSON.stringify({ until: iso(until) }) });
  }

  private async startSubPlan(trx: Db, ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): Promise<void> {
    const input = (render(def.input ?? {}, scope) ?? {}) as Record<string, unknown>;
    this.change(step, { input: JSON.stringify(input) });
    this.record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt, plan_id: def.plan_id });
    if (ctx.run.depth + 1 > MAX_DEPTH) {
      this.fail(ctx, step, `sub-plans nest deeper than ${MAX_DEPTH} levels`);
      return;
    }
    const plan = await this.store.currentPlan(trx, def.plan_id!);
    if (!plan) {
      this.fail(ctx, step, `plan '${def.plan_id}' does not exist`);
      return;
    }
    const child = await this.start(
      trx,
      { planId: plan.id, planVersion: plan.version, definition: plan.definition, definitionText: plan.text, input, event: ctx.event ?? undefined, createdBy: ctx.run.created_by },
      { run: ctx.run, stepId: step.row.step_id },
    );
    this.change(step, { child_run_id: child.id });
    this.childOutcome(ctx, step, child);
  }

  /** Creates one step per item of a for_each (kept across a redrive: items already done stay done). */
  private expand(ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): void {
    const id = step.row.step_id;
    const existing = [...ctx.steps.values()].some((s) => s.row.parent_step_id === id);
    if (existing) return;
    const items = render(def.for_each, scope);
    if (!Array.isArray(items)) throw new StepError(`for_each yielded ${items === null ? 'null' : typeof items}, not an array`);
    if (items.length > MAX_ITEMS) throw new StepError(`for_each yielded ${items.length} items; at most ${MAX_ITEMS}`);
    items.forEach((item, index) => {
      const instanceId = `${id}[${index}]`;
      const row: RunStepRow = {
        ...step.row,
        step_id: instanceId,
        parent_step_id: id,
        item_index: index,
        item: JSON.stringify(item ?? null),
        ...NOT_STARTED,
      };
      ctx.steps.set(instanceId, { row, dirty: true });
    });
  }

  /** A running parallel step completes when all its members finished, and fails with the first that failed. */
  private settleGroup(ctx: RunContext, group: StepState): boolean {
    const def = this.definition(ctx, group);
    const members =
      def.for_each !== undefined
        ? [...ctx.steps.values()].filter((s) => s.row.parent_step_id === group.row.step_id)
        : (def.steps ?? []).map((id) => ctx.steps.get(id)!);
    const failed = members.find((m) => m.row.status === 'failed' || m.row.status === 'cancelled');
    if (failed) {
      this.fail(ctx, group, `step '${failed.row.step_id}' ${failed.row.status}${failed.row.error ? `: ${failed.row.error}` : ''}`);
      return true;
    }
    if (!members.every((m) => FINISHED.has(m.row.status))) return false;
    const output =
      def.for_each !== undefined
        ? members.sort((a, b) => a.row.item_index - b.row.item_index).map((m) => this.output(m))
        : Object.fromEntries(members.map((m) => [m.row.step_id, m.row.status === 'completed' ? this.output(m) : null]));
    this.complete(ctx, group, output);
    return true;
  }

  private async onTimer(trx: Db, ctx: RunContext, step: StepState): Promise<void> {
    const def = this.definition(ctx, step);
    if (def.type === 'agent') {
      await this.withdraw(trx, ctx, step, 'step timed out');
      const seconds = def.timeout_seconds ?? DEFAULT_STEP_TIMEOUT_S;
      await this.failAttempt(trx, ctx, step, `timed out after ${seconds} s without an acknowledgement`);
    } else if (def.type === 'human_approval') {
      const policy = def.on_timeout ?? 'fail';
      this.record(ctx, 'step.timed_out', step.row.step_id, { on_timeout: policy });
      if (policy === 'fail') this.fail(ctx, step, `no decision within ${def.timeout_seconds} s`);
      else this.decide(ctx, step, policy === 'approve', `${policy === 'approve' ? 'approved' : 'rejected'} on timeout`, PLATFORM_SENDER);
    } else {
      this.complete(ctx, step, { waited_until: iso(step.row.wake_at!) });
    }
  }

  /** Stops what a step has in flight: its unacknowledged message or its child run. */
  private async withdraw(trx: Db, ctx: RunContext, step: StepState, reason: string): Promise<void> {
    if (step.row.status !== 'running') return;
    // A message this transition has yet to send goes out first, so it is withdrawn like any other.
    if (ctx.outbox.some((p) => p.step === step)) await this.send(trx, ctx.outbox);
    if (step.row.message_id !== null) await this.deps.inbox.cancel(step.row.message_id, reason, trx);
    if (step.row.child_run_id !== null) await this.cancel(trx, step.row.child_run_id, reason, true);
  }

  // ── Step outcomes ───────────────────────────────────────────────────────────────────

  private complete(ctx: RunContext, step: StepState, output: unknown): void {
    this.change(step, { status: 'completed', output: JSON.stringify(output), completed_at: ctx.now, wake_at: null, wait_topic: null, error: null });
    step.output = output;
    this.record(ctx, 'step.completed', step.row.step_id, { attempt: step.row.attempt });
  }

  private fail(ctx: RunContext, step: StepState, reason: string, output: unknown = null): void {
    ctx.failed ??= step;
    this.change(step, { status: 'failed', error: reason, output: JSON.stringify(output), completed_at: ctx.now, wake_at: null, wait_topic: null });
    this.record(ctx, 'step.failed', step.row.step_id, { attempt: step.row.attempt, error: reason });
  }

  private skip(ctx: RunContext, step: StepState, reason: string): void {
    this.change(step, { status: 'skipped', completed_at: ctx.now });
    this.record(ctx, 'step.skipped', step.row.step_id, { reason });
  }

  /**
   * An agent attempt failed: retry after backoff while attempts remain, then (adaptive runs)
   * re-route to another agent with the capability, else fail the step.
   */
  private async failAttempt(trx: Db, ctx: RunContext, step: StepState, reason: string): Promise<void> {
    const def = this.definition(ctx, step);
    const detail = { ...this.detail(step) };
    const maxAttempts = def.retry?.max_attempts ?? 1;
    const used = step.row.attempt - (detail.attempt_base ?? 0);
    if (used < maxAttempts) {
      const backoff = Math.min(MAX_BACKOFF_S, (def.retry?.backoff_seconds ?? 0) * 2 ** (used - 1));
      const retryAt = ctx.now + backoff * 1000;
      this.change(step, { status: 'pending', error: reason, wake_at: retryAt, message_id: null });
      this.record(ctx, 'step.retrying', step.row.step_id, { attempt: step.row.attempt, error: reason, retry_at: iso(retryAt) });
      return;
    }
    const adaptive = parseNullableJson(ctx.run.adaptive) as Adaptive | null;
    const revisions = JSON.parse(ctx.run.revisions) as Revision[];
    if (adaptive?.enabled && def.capability !== undefined && revisions.length < (adaptive.max_revisions ?? DEFAULT_MAX_REVISIONS)) {
      const candidates = await this.deps.directory.lookup({ capability: def.capability, strategy: def.strategy, limit: 50 }, trx);
      const next = candidates.find((c) => !(detail.tried ?? []).includes(c.agent_id));
      if (next) {
        const revision: Revision = {
          step: step.row.step_id,
          reason,
          change: { action: 'reroute', from_agent: step.row.agent_id, to_agent: next.agent_id },
          at: iso(ctx.now),
        };
        ctx.run.revisions = JSON.stringify([...revisions, revision]);
        this.setDetail(step, { ...detail, route_to: next.agent_id, attempt_base: step.row.attempt });
        this.change(step, { status: 'pending', error: reason, wake_at: null, message_id: null });
        this.record(ctx, 'run.revised', step.row.step_id, { reason, change: revision.change });
        return;
      }
    }
    this.fail(ctx, step, reason);
  }

  // ── Run outcome ─────────────────────────────────────────────────────────────────────

  private async settleRun(trx: Db, ctx: RunContext): Promise<void> {
    const failed = ctx.failed;
    if (failed) {
      // A group whose member failed fails with it (rather than showing as cancelled).
      for (const step of ctx.steps.values()) {
        if (step.row.status === 'running' && this.definition(ctx, step).type === 'parallel') this.settleGroup(ctx, step);
      }
      for (const step of ctx.steps.values()) {
        if (!IN_FLIGHT.has(step.row.status)) continue;
        await this.withdraw(trx, ctx, step, 'run failed');
        this.change(step, { status: 'cancelled', wake_at: null, wait_topic: null, completed_at: ctx.now });
        this.record(ctx, 'step.cancelled', step.row.step_id, { reason: 'run failed' });
      }
      this.finish(ctx, 'failed', null, `step '${failed.row.step_id}' failed: ${failed.row.error ?? 'unknown error'}`);
      return;
    }
    const open = [...ctx.steps.values()].filter((s) => !FINISHED.has(s.row.status));
    if (open.length === 0) {
      this.finish(ctx, 'completed', this.runOutput(ctx), null);
      return;
    }
    // Waiting: nothing moves until a person, a timer or an event does (groups only reflect their members).
    const members = open.filter((s) => !(s.row.status === 'running' && this.definition(ctx, s).type === 'parallel'));
    const outside = (s: StepState) => s.row.status === 'waiting' || (s.row.status === 'running' && this.definition(ctx, s).type === 'wait');
    const blockedOnOutside = members.some(outside) && members.every((s) => outside(s) || s.row.status === 'pending');
    const status: RunStatus = blockedOnOutside ? 'waiting' : 'running';
    if (status !== ctx.run.status) this.record(ctx, status === 'waiting' ? 'run.waiting' : 'run.resumed', null);
    let wakeAt: number | null = null;
    for (const s of open) if (s.row.wake_at !== null && (wakeAt === null || s.row.wake_at < wakeAt)) wakeAt = s.row.wake_at;
    Object.assign(ctx.run, { status, wake_at: wakeAt });
  }

  private runOutput(ctx: RunContext): unknown {
    if (ctx.plan.output !== undefined) return render(ctx.plan.output, this.scope(ctx, null));
    const output: Record<string, unknown> = {};
    for (const id of ctx.plan.sinks) {
      const step = ctx.steps.get(id)!;
      if (step.row.status === 'completed') output[id] = this.output(step);
    }
    return output;
  }

  private finish(ctx: RunContext, status: RunStatus, output: unknown, error: string | null): void {
    Object.assign(ctx.run, { status, output: output === null ? null : JSON.stringify(output), error, completed_at: ctx.now, wake_at: null });
    this.record(ctx, `run.${status}`, null, error ? { error } : {});
  }
}
