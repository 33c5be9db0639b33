import type { Logger } from 'pino';
import { autocommit, type Tx } from '../db/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import type { Expressions } from '../kernel/expression-pool.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import type { Notifier } from '../kernel/notifier.js';
import { contextOf, inSpan, traceparentOfSpan } from '../kernel/tracing.js';
import { SYSTEM_ACTOR, type AgentDirectory, type EventLog, type Inbox, type MessageOutcome, type PublishedEvent } from '../kernel/ports.js';
import { isJsonObject } from '../kernel/json.js';
import { ajvFieldProblems } from '../kernel/validation-problems.js';
import { topicMatches } from '../kernel/topics.js';
import { DEFAULT_MAX_CONCURRENCY, DEFAULT_STEP_TIMEOUT_S, inputValidator, type StepTemplate } from './plan.js';
import type { ApprovalClaim, ApprovalLinks } from './approval-links.js';
import { decisionRefusal, type Decider } from './approvers.js';
import { RunContexts } from './run-contexts.js';
import {
  changeStep,
  completeStep,
  definition,
  failStep,
  FINISHED,
  finishRun,
  IN_FLIGHT,
  NOT_STARTED,
  PLATFORM_SENDER,
  record,
  RUN_FINISHED,
  setStepDetail,
  skipStep,
  stepDetail,
  stepOutput,
  takeChildOutcome,
  templateScope,
  type RunContext,
  type StartRun,
  type StepState,
} from './run-state.js';
import { StepStarters } from './step-starters.js';
import type { CoordinationStore, RunRow, RunStepRow } from './store.js';
import type { RunStatus } from './tables.js';

/** Who decides a human_approval on its timeout (on_timeout: approve or reject). */
const PLATFORM_DECIDER: Decider = {
  kind: 'system',
  id: PLATFORM_SENDER,
  actor: PLATFORM_SENDER,
  agentId: null,
  role: null,
  mayDecide: true,
  overrides: true,
};
import { render } from './templates.js';

/** Wakes every node's run timer when a run gets an earlier timer. */
export const COORDINATION_CHANGED = 'coordination:changed';

export interface EngineDeps {
  store: CoordinationStore;
  inbox: Inbox;
  directory: AgentDirectory;
  clock: Clock;
  notifier: Notifier;
  logger: Logger;
  /** Where runs' transitions are told (run-events.ts). */
  events: EventLog;
  /** Signs the approval links of human steps' events and approvers' messages. */
  links: ApprovalLinks;
  metrics: DomainMetrics;
  /** Evaluates conditions' and transforms' expressions. */
  expressions: Expressions;
  /** When this node's timer worker looks next (0 while it is running a pass). */
  timerPlannedAt: () => number;
}

/** Who decided a human step and when, once it was approved, rejected or given its input. */
function decisionOf(step: StepState): { by: string; at: string } | null {
  const output = stepOutput(step) as { decided_by?: string; decided_at?: string } | null;
  if (output?.decided_by && output.decided_at) return { by: output.decided_by, at: output.decided_at };
  const submittedBy = stepDetail(step).submitted_by;
  if (submittedBy && step.row.completed_at !== null) return { by: submittedBy, at: iso(step.row.completed_at) };
  return null;
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
 * The runs in memory and their saving are `RunContexts` (run-contexts.ts), the changes a
 * transition makes are run-state.ts, and starting a ready step is `StepStarters` (step-starters.ts).
 */
export class RunEngine {
  private readonly contexts: RunContexts;
  private readonly starters: StepStarters;

  constructor(private readonly deps: EngineDeps) {
    this.contexts = new RunContexts({ store: deps.store, inbox: deps.inbox, clock: deps.clock, events: deps.events, links: deps.links, metrics: deps.metrics });
    this.starters = new StepStarters({
      store: deps.store,
      directory: deps.directory,
      expressions: deps.expressions,
      startChild: (tx, spec, parent) => this.start(tx, spec, parent),
    });
  }

  /** The steps of `run` in plan order (position, then item): from memory when this node saved it last. */
  async stepsOf(tx: Tx, run: RunRow): Promise<RunStepRow[]> {
    return this.contexts.stepsOf(tx, run);
  }

  // ── Entry points (each inside the caller's transaction) ─────────────────────────────

  /** Creates a run and starts its first steps; returns the saved run row. */
  async start(tx: Tx, spec: StartRun, parent?: { run: RunRow; stepId: string }): Promise<RunRow> {
    return inWorkflowSpan(spec, async (traceparent) => {
      const ctx = this.contexts.create(spec, parent, traceparent);
      await this.advance(tx, ctx);
      await this.save(tx, [ctx]);
      return ctx.run;
    });
  }

  /**
   * Creates several runs and starts their first steps (triggered runs of one batch of events):
   * each run advances as `start` would, then they are inserted together. Returns their rows.
   */
  async startMany(tx: Tx, specs: StartRun[]): Promise<RunRow[]> {
    const contexts: RunContext[] = [];
    for (const spec of specs) {
      await inWorkflowSpan(spec, async (traceparent) => {
        const ctx = this.contexts.create(spec, undefined, traceparent);
        await this.advance(tx, ctx);
        contexts.push(ctx);
      });
    }
    await this.save(tx, contexts);
    return contexts.map((ctx) => ctx.run);
  }

  /**
   * Messaging's outcome handler: agent steps' messages were acknowledged or dead-lettered. A
   * batch (one batch acknowledgement) loads its runs in one locked read and saves them in one
   * write (on PostgreSQL), instead of a few round trips per message.
   */
  async onOutcomes(tx: Tx, outcomes: MessageOutcome[]): Promise<void> {
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
    for (const ctx of await this.contexts.loadMany(tx, [...byRun.keys()])) {
      let changed = false;
      for (const outcome of byRun.get(ctx.run.id)!) {
        // An acknowledgement is the agent's request; a dead letter may be the reaper's.
        ctx.actor = outcome.status === 'acknowledged' ? outcome.destination : SYSTEM_ACTOR;
        const [, stepId, attempt] = outcome.origin.ref.split('|');
        const step = ctx.steps.get(stepId!);
        // An outcome for an attempt the run has moved past (timed out, cancelled) changes nothing.
        if (!step || step.row.status !== 'running' || String(step.row.attempt) !== attempt || step.row.message_id !== outcome.message_id) continue;
        if (outcome.status === 'acknowledged') completeStep(ctx, step, outcome.output ?? {});
        else await this.starters.failAttempt(tx, ctx, step, outcome.reason ?? 'dead-lettered');
        await this.advance(tx, ctx);
        changed = true;
      }
      if (changed) moved.push(ctx);
    }
    await this.save(tx, moved);
  }

  /** Advances a run whose timer is due (the worker claimed it). */
  async wake(tx: Tx, run: RunRow): Promise<void> {
    // In the run's trace: a step retried after its backoff, or timed out, stays in it.
    await inSpan(
      `resume_workflow ${run.plan_id}`,
      { parent: contextOf(run.traceparent), attributes: { 'gen_ai.operation.name': 'invoke_workflow', 'switchboard.run.id': run.id } },
      async () => {
        const ctx = await this.contexts.fromRow(tx, run);
        await this.advance(tx, ctx);
        await this.save(tx, [ctx]);
      },
    );
  }

  private async mustLoad(tx: Tx, runId: string): Promise<RunContext> {
    const ctx = await this.contexts.load(tx, runId);
    if (!ctx) throw new NotFound('Run', runId);
    return ctx;
  }

  /**
   * The waiting human step a decision is for. Through an approval link (`claim`), the link's
   * wait of the step must be the one waiting, and the link must not have expired.
   */
  private humanStep(ctx: RunContext, stepId: string, type: 'human_approval' | 'human_input' | null, claim?: ApprovalClaim): { step: StepState; def: StepTemplate } {
    const step = ctx.steps.get(stepId);
    if (!step) throw new NotFound('Step', stepId);
    const def = definition(ctx, step);
    if (type !== null && def.type !== type) throw new Conflict(`Step '${stepId}' is a ${def.type} step, not ${type}`);
    if (step.row.status !== 'waiting') {
      const decided = decisionOf(step);
      if (decided) throw new Conflict(`Step '${stepId}' was already decided by ${decided.by} at ${decided.at}`, { decided_by: decided.by, decided_at: decided.at });
      if (ctx.run.status === 'cancelled') throw new Conflict(`Run '${ctx.run.id}' was cancelled: ${ctx.run.error ?? 'no reason given'}`);
      throw new Conflict(`Step '${stepId}' is ${step.row.status}, not waiting`);
    }
    if (claim) {
      if (claim.waitId !== stepDetail(step).wait_id) throw new Conflict(`This link is for an earlier wait of step '${stepId}'; the step asks again with a new link`);
      if (claim.expiresAt <= ctx.now) throw new Conflict(`This link expired at ${iso(claim.expiresAt)}`);
    }
    return { step, def };
  }

  /**
   * What an approval link shows (GET never decides): the run and the waiting step it is for,
   * checked as a decision through it would be.
   */
  async linkedStep(runId: string, stepId: string, claim?: ApprovalClaim): Promise<{ ctx: RunContext; step: StepState; def: StepTemplate }> {
    const ctx = await this.contexts.load(autocommit, runId, { lock: false });
    if (!ctx) throw new NotFound('Run', runId);
    return { ctx, ...this.humanStep(ctx, stepId, null, claim) };
  }

  async approve(
    tx: Tx,
    runId: string,
    stepId: string,
    decision: { approved: boolean; comment?: string; reason?: string },
    by: Decider,
    claim?: ApprovalClaim,
  ): Promise<void> {
    const ctx = await this.mustLoad(tx, runId);
    ctx.actor = by.actor;
    ctx.reason = decision.reason ?? null;
    const { step, def } = this.humanStep(ctx, stepId, 'human_approval', claim);
    const refusal = decisionRefusal(def.approvers ?? [], by);
    if (refusal !== null) throw new Forbidden(`${refusal} (step '${stepId}')`);
    this.decide(ctx, step, decision.approved, decision.comment ?? null, by);
    await this.advance(tx, ctx);
    await this.save(tx, [ctx]);
  }

  /** Records who decided as the principal's kind and id (`decided_by` stays the id, as before). */
  private decide(ctx: RunContext, step: StepState, approved: boolean, comment: string | null, by: Decider): void {
    const output = { approved, comment, decided_by: by.id, decided_by_kind: by.kind, decided_at: iso(ctx.now) };
    record(ctx, approved ? 'step.approved' : 'step.rejected', step.row.step_id, { decided_by: by.id, decided_by_kind: by.kind, comment });
    if (approved) completeStep(ctx, step, output);
    else failStep(ctx, step, `rejected by ${by.id}${comment ? `: ${comment}` : ''}`, output);
  }

  /** `by`: who submits (its actor, and the agent or actor recorded on the step); `reason` goes to the event log. */
  async submitInput(
    tx: Tx,
    runId: string,
    stepId: string,
    data: Record<string, unknown>,
    by: Decider & { reason?: string },
    claim?: ApprovalClaim,
  ): Promise<void> {
    const ctx = await this.mustLoad(tx, runId);
    ctx.actor = by.actor;
    ctx.reason = by.reason ?? null;
    const { step, def } = this.humanStep(ctx, stepId, 'human_input', claim);
    const refusal = decisionRefusal([], by);
    if (refusal !== null) throw new Forbidden(`${refusal} (step '${stepId}')`);
    const validate = inputValidator(def.schema ?? {});
    if (!validate(data)) {
      throw new InvalidRequest('data does not match the step schema', ajvFieldProblems(validate.errors ?? [], 'data'));
    }
    record(ctx, 'step.input_received', stepId, { by: by.id, by_kind: by.kind });
    setStepDetail(step, { ...stepDetail(step), submitted_by: by.id });
    completeStep(ctx, step, data);
    await this.advance(tx, ctx);
    await this.save(tx, [ctx]);
  }

  /**
   * Cancels a running or waiting run, its in-flight steps and their child runs. `reason` is the
   * run's error; `by` is who asked, with the reason the request gave, for the event log.
   */
  async cancel(
    tx: Tx,
    runId: string,
    reason: string,
    { fromParent = false, by }: { fromParent?: boolean; by?: { actor: string; reason?: string } } = {},
  ): Promise<RunRow> {
    const ctx = await this.mustLoad(tx, runId);
    if (by) {
      ctx.actor = by.actor;
      ctx.reason = by.reason ?? null;
    }
    if (RUN_FINISHED.has(ctx.run.status)) {
      if (fromParent) return ctx.run;
      throw new Conflict(`Run '${runId}' is already ${ctx.run.status}`);
    }
    ctx.parentInMemory = fromParent;
    for (const step of ctx.steps.values()) {
      if (FINISHED.has(step.row.status)) continue;
      await this.withdraw(tx, ctx, step, reason);
      changeStep(step, { status: 'cancelled', wake_at: null, wait_topic: null, completed_at: ctx.now });
      record(ctx, 'step.cancelled', step.row.step_id, { reason });
    }
    finishRun(ctx, 'cancelled', null, reason);
    await this.save(tx, [ctx]);
    return ctx.run;
  }

  /** Restarts a failed run from its failed and cancelled steps; completed ones keep their output. */
  /** `by`: who asks (its actor, and the agent or actor recorded on the timeline); `reason` goes to the event log. */
  async redrive(tx: Tx, runId: string, by: { actor: string; name: string; reason?: string }): Promise<void> {
    const ctx = await this.mustLoad(tx, runId);
    ctx.actor = by.actor;
    ctx.reason = by.reason ?? null;
    if (ctx.run.status !== 'failed') throw new Conflict(`Run '${runId}' is ${ctx.run.status}; only failed runs can be redriven`);
    const restarted: string[] = [];
    for (const step of ctx.steps.values()) {
      if (step.row.status !== 'failed' && step.row.status !== 'cancelled') continue;
      restarted.push(step.row.step_id);
      const { tried } = stepDetail(step);
      changeStep(step, {
        ...NOT_STARTED,
        detail: JSON.stringify(tried ? { tried } : {}),
      });
    }
    Object.assign(ctx.run, { status: 'running', error: null, output: null, completed_at: null });
    record(ctx, 'run.redriven', null, { by: by.name, steps: restarted });
    await this.advance(tx, ctx);
    await this.save(tx, [ctx]);
  }

  /** A published event: completes the wait steps whose topic and match it satisfies. */
  async onEvent(tx: Tx, event: PublishedEvent): Promise<number> {
    const waiters = (await this.deps.store.eventWaiters(tx)).filter((w) => topicMatches(w.wait_topic, event.topic));
    let resumed = 0;
    for (const runId of new Set(waiters.map((w) => w.run_id))) {
      const ctx = await this.contexts.load(tx, runId);
      if (!ctx) continue;
      let changed = false;
      for (const waiter of waiters.filter((w) => w.run_id === runId)) {
        const step = ctx.steps.get(waiter.step_id);
        if (!step || step.row.status !== 'running' || step.row.wait_topic === null) continue;
        const { match } = stepDetail(step);
        if (match !== undefined && !matches(match, event.payload)) continue;
        completeStep(ctx, step, { topic: event.topic, payload: event.payload, published_at: event.published_at, publisher: event.publisher });
        changed = true;
        resumed++;
      }
      if (!changed) continue;
      await this.advance(tx, ctx);
      await this.save(tx, [ctx]);
    }
    return resumed;
  }

  /** A child run (sub_plan) finished: its parent step completes or fails with it. */
  private async childFinished(tx: Tx, child: RunRow): Promise<void> {
    const ctx = await this.contexts.load(tx, child.parent_run_id!);
    const step = ctx?.steps.get(child.parent_step_id!);
    if (!ctx || !step || step.row.status !== 'running' || step.row.child_run_id !== child.id) return;
    takeChildOutcome(ctx, step, child);
    await this.advance(tx, ctx);
    await this.save(tx, [ctx]);
  }

  // ── The transition loop ─────────────────────────────────────────────────────────────

  /** Fires due timers, starts ready steps and settles groups until nothing moves; then the run status. */
  private async advance(tx: Tx, ctx: RunContext): Promise<void> {
    if (RUN_FINISHED.has(ctx.run.status)) return;
    for (let moved = true; moved && !ctx.failed; ) {
      moved = false;
      const active = this.activeMembers(ctx);
      for (const step of [...ctx.steps.values()]) {
        if (ctx.failed) break;
        const { status, wake_at } = step.row;
        if (IN_FLIGHT.has(status) && wake_at !== null && wake_at <= ctx.now) {
          await this.onTimer(tx, ctx, step);
          moved = true;
        } else if (status === 'pending') {
          const readiness = this.readiness(ctx, step, active);
          if (readiness === 'skip') {
            skipStep(ctx, step, 'every step it depends on was skipped');
            moved = true;
          } else if (readiness === 'start') {
            await this.starters.start(tx, ctx, step);
            const group = step.row.parent_step_id;
            if (group !== null && IN_FLIGHT.has(step.row.status)) active.set(group, (active.get(group) ?? 0) + 1);
            moved = true;
          }
        } else if (status === 'running' && definition(ctx, step).type === 'parallel') {
          moved = this.settleGroup(ctx, step) || moved;
        }
      }
    }
    await this.settleRun(tx, ctx);
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

  /** A running parallel step completes when all its members finished, and fails with the first that failed. */
  private settleGroup(ctx: RunContext, group: StepState): boolean {
    const def = definition(ctx, group);
    const members =
      def.for_each !== undefined
        ? [...ctx.steps.values()].filter((s) => s.row.parent_step_id === group.row.step_id)
        : (def.steps ?? []).map((id) => ctx.steps.get(id)!);
    const failed = members.find((m) => m.row.status === 'failed' || m.row.status === 'cancelled');
    if (failed) {
      failStep(ctx, group, `step '${failed.row.step_id}' ${failed.row.status}${failed.row.error ? `: ${failed.row.error}` : ''}`);
      return true;
    }
    if (!members.every((m) => FINISHED.has(m.row.status))) return false;
    const output =
      def.for_each !== undefined
        ? members.sort((a, b) => a.row.item_index - b.row.item_index).map((m) => stepOutput(m))
        : Object.fromEntries(members.map((m) => [m.row.step_id, m.row.status === 'completed' ? stepOutput(m) : null]));
    completeStep(ctx, group, output);
    return true;
  }

  private async onTimer(tx: Tx, ctx: RunContext, step: StepState): Promise<void> {
    const def = definition(ctx, step);
    if (def.type === 'agent') {
      await this.withdraw(tx, ctx, step, 'step timed out');
      const seconds = def.timeout_seconds ?? DEFAULT_STEP_TIMEOUT_S;
      await this.starters.failAttempt(tx, ctx, step, `timed out after ${seconds} s without an acknowledgement`);
    } else if (def.type === 'human_approval') {
      const policy = def.on_timeout ?? 'fail';
      record(ctx, 'step.timed_out', step.row.step_id, { on_timeout: policy });
      if (policy === 'fail') failStep(ctx, step, `no decision within ${def.timeout_seconds} s`);
      else this.decide(ctx, step, policy === 'approve', `${policy === 'approve' ? 'approved' : 'rejected'} on timeout`, PLATFORM_DECIDER);
    } else {
      completeStep(ctx, step, { waited_until: iso(step.row.wake_at!) });
    }
  }

  /** Stops what a step has in flight: its unacknowledged message or its child run. */
  private async withdraw(tx: Tx, ctx: RunContext, step: StepState, reason: string): Promise<void> {
    if (step.row.status !== 'running') return;
    // A message this transition has yet to send goes out first, so it is withdrawn like any other.
    if (ctx.outbox.some((p) => p.step === step)) await this.contexts.send(tx, ctx.outbox);
    if (step.row.message_id !== null) await this.deps.inbox.cancel(tx, step.row.message_id, reason);
    if (step.row.child_run_id !== null) await this.cancel(tx, step.row.child_run_id, reason, { fromParent: true });
  }

  // ── Run outcome ─────────────────────────────────────────────────────────────────────

  private async settleRun(tx: Tx, ctx: RunContext): Promise<void> {
    const failed = ctx.failed;
    if (failed) {
      // A group whose member failed fails with it (rather than showing as cancelled).
      for (const step of ctx.steps.values()) {
        if (step.row.status === 'running' && definition(ctx, step).type === 'parallel') this.settleGroup(ctx, step);
      }
      for (const step of ctx.steps.values()) {
        if (!IN_FLIGHT.has(step.row.status)) continue;
        await this.withdraw(tx, ctx, step, 'run failed');
        changeStep(step, { status: 'cancelled', wake_at: null, wait_topic: null, completed_at: ctx.now });
        record(ctx, 'step.cancelled', step.row.step_id, { reason: 'run failed' });
      }
      finishRun(ctx, 'failed', null, `step '${failed.row.step_id}' failed: ${failed.row.error ?? 'unknown error'}`);
      return;
    }
    const open = [...ctx.steps.values()].filter((s) => !FINISHED.has(s.row.status));
    if (open.length === 0) {
      finishRun(ctx, 'completed', this.runOutput(ctx), null);
      return;
    }
    // Waiting: nothing moves until a person, a timer or an event does (groups only reflect their members).
    const members = open.filter((s) => !(s.row.status === 'running' && definition(ctx, s).type === 'parallel'));
    const outside = (s: StepState) => s.row.status === 'waiting' || (s.row.status === 'running' && definition(ctx, s).type === 'wait');
    const blockedOnOutside = members.some(outside) && members.every((s) => outside(s) || s.row.status === 'pending');
    const status: RunStatus = blockedOnOutside ? 'waiting' : 'running';
    if (status !== ctx.run.status) record(ctx, status === 'waiting' ? 'run.waiting' : 'run.resumed', null);
    let wakeAt: number | null = null;
    for (const s of open) if (s.row.wake_at !== null && (wakeAt === null || s.row.wake_at < wakeAt)) wakeAt = s.row.wake_at;
    Object.assign(ctx.run, { status, wake_at: wakeAt });
  }

  private runOutput(ctx: RunContext): unknown {
    if (ctx.plan.output !== undefined) return render(ctx.plan.output, templateScope(ctx, null));
    const output: Record<string, unknown> = {};
    for (const id of ctx.plan.sinks) {
      const step = ctx.steps.get(id)!;
      if (step.row.status === 'completed') output[id] = stepOutput(step);
    }
    return output;
  }

  // ── Saving ──────────────────────────────────────────────────────────────────────────

  /** Saves the runs a transition moved (RunContexts), then what follows a save. */
  private async save(tx: Tx, contexts: RunContext[]): Promise<void> {
    if (contexts.length === 0) return;
    await this.contexts.save(tx, contexts);
    await this.saved(tx, contexts);
  }

  /**
   * What follows a save: timers and parents. The save remembered every saved run's steps, so a
   * parent that was saved in the same batch as its finishing child is read back as saved.
   */
  private async saved(tx: Tx, contexts: RunContext[]): Promise<void> {
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
        await this.childFinished(tx, run);
      }
    }
    if (wakeTimers) await this.deps.notifier.notifyIn(tx, COORDINATION_CHANGED);
  }
}

/**
 * A run's start in an `invoke_workflow {plan}` span (OTel GenAI conventions), a child of the
 * active span (the request, the trigger's fire); its context is stored with the run.
 */
function inWorkflowSpan<T>(spec: StartRun, fn: (traceparent: string | null) => Promise<T>): Promise<T> {
  const name = spec.planAlias ?? spec.planId;
  return inSpan(
    `invoke_workflow ${name}`,
    { attributes: { 'gen_ai.operation.name': 'invoke_workflow', 'gen_ai.agent.name': name, 'switchboard.plan.id': spec.planId, 'switchboard.plan.version': spec.planVersion } },
    (span) => fn(traceparentOfSpan(span)),
  );
}
