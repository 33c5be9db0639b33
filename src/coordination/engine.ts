import type { Logger } from 'pino';
import type { StepRefs } from './step-refs.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import { Conflict, NotFound } from '../kernel/errors.js';
import type { Expressions } from '../kernel/expression-pool.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import type { Notifier } from '../kernel/notifier.js';
import { SYSTEM_ACTOR, type AgentDirectory, type EventLog, type Inbox, type MessageOutcome, type PublishedEvent } from '../kernel/ports.js';
import { topicMatches } from '../kernel/topics.js';
import type { StepTemplate } from './plan-definition.js';
import type { ApprovalClaim, ApprovalLinks } from './approval-links.js';
import type { ApprovalNotices } from './approval-notices.js';
import type { Decider } from './approvers.js';
import { waitingHumanStep } from './human-step.js';
import { RunContexts } from './run-contexts.js';
import { RunLimits } from './run-limits.js';
import type { RunLimitsStore } from './run-limits-store.js';
import { activeMembers, readiness } from './step-readiness.js';
import {
  changeStep,
  definition,
  FINISHED,
  finishRun,
  IN_FLIGHT,
  NOT_STARTED,
  record,
  RUN_FINISHED,
  skipStep,
  stepDetail,
  signalTo,
  type RunContext,
  type Signal,
  type StartRun,
  type StepState,
} from './run-state.js';
import { runEnd } from './step-outputs.js';
import { inResumeSpan, inWorkflowSpan } from './workflow-spans.js';
import { kindOf, kindOfStep, parseAttemptRef, startStep, type HumanDecision, type StepPorts } from './steps/index.js';
import type { PlanStore } from './plan-store.js';
import type { StepWorkStore } from './step-work-store.js';
import type { RunRow, RunStepRow } from './run-list-store.js';
import type { RunStore } from './run-store.js';
import type { RunStatus } from './tables.js';

/** Wakes every node's run timer when a run gets an earlier timer. */
export const COORDINATION_CHANGED = 'coordination:changed';

export interface EngineDeps {
  store: RunStore;
  /** Plans' run limits (concurrency, rate). */
  limits: RunLimitsStore;
  /** The plans sub_plan steps start. */
  plans: PlanStore;
  checkpoints: StepWorkStore;
  inbox: Inbox;
  directory: AgentDirectory;
  pauses: StepPorts['pauses'];
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
  /** What human steps tell their notification channels. */
  notices: ApprovalNotices;
  /** Large step inputs and outputs by reference. */
  refs: StepRefs;
}

/**
 * The run engine: every transition loads the run under a lock, moves its steps, starts
 * whatever became ready, and commits with the messages it sends, so a crash never loses or
 * repeats a step. Callers pass the transaction; one transition never spans two. The runs in
 * memory and their saving are `RunContexts` (run-contexts.ts), the changes a transition makes
 * are run-state.ts, and what a step does is its kind's (steps/): the engine names no kind.
 */
export class RunEngine {
  private readonly contexts: RunContexts;
  /** What step kinds reach outside the run: the directory, expressions, plans, messages and child runs. */
  private readonly ports: StepPorts;
  private readonly limits: RunLimits;

  constructor(private readonly deps: EngineDeps) {
    this.limits = new RunLimits({ store: deps.limits, cancel: (tx, runId, reason) => this.cancel(tx, runId, reason) });
    this.contexts = new RunContexts(deps);
    this.ports = {
      directory: deps.directory,
      pauses: deps.pauses,
      expressions: deps.expressions,
      plans: deps.plans,
      checkpoints: deps.checkpoints,
      readOutput: (tx, ref) => deps.refs.readOutput(tx, ref),
      cancelMessage: async (tx, ctx, step, reason) => {
        // A message this transition has yet to send goes out first, so it is withdrawn like any other.
        if (ctx.outbox.some((p) => p.step === step)) await this.contexts.send(tx, ctx.outbox);
        if (step.row.message_id !== null) await this.deps.inbox.cancel(tx, step.row.message_id, reason);
      },
      startChild: (tx, spec, parent) => this.start(tx, spec, parent),
      cancelChild: (tx, runId, reason) => this.cancel(tx, runId, reason, { fromParent: true }).then(() => undefined),
    };
  }

  /** The steps of `run` in plan order (position, then item): from memory when this node saved it last. */
  async stepsOf(tx: Tx, run: RunRow): Promise<RunStepRow[]> {
    return this.contexts.stepsOf(tx, run);
  }

  // ── Entry points (each inside the caller's transaction) ─────────────────────────────

  /** Creates a run and starts its first steps; returns the saved run row. `seed` fills steps first (a rerun's reused ones). */
  async start(tx: Tx, spec: StartRun, parent?: { run: RunRow; stepId: string }, seed?: (ctx: RunContext) => void): Promise<RunRow> {
    const ctx = await this.begin(tx, spec, parent, seed);
    await this.save(tx, [ctx]);
    return ctx.run;
  }

  /**
   * Creates several runs and starts their first steps (triggered runs of one batch of events):
   * each run begins as `start`'s would, then they are inserted together. Returns their rows, in order.
   */
  async startMany(tx: Tx, specs: StartRun[]): Promise<RunRow[]> {
    const batch: RunContext[] = [];
    const runs: RunRow[] = [];
    for (const spec of specs) {
      const ctx = await this.begin(tx, spec);
      // A limit counts saved runs: a limited plan's run is saved before the next one is admitted.
      if (spec.definition.concurrency || spec.definition.rate_limit) await this.save(tx, [ctx]);
      else batch.push(ctx);
      runs.push(ctx.run);
    }
    await this.save(tx, batch);
    return runs;
  }

  /** A new run, admitted (or queued, or cancelled) by its plan's limits, and advanced when admitted; not yet saved. */
  private begin(tx: Tx, spec: StartRun, parent?: { run: RunRow; stepId: string }, seed?: (ctx: RunContext) => void): Promise<RunContext> {
    return inWorkflowSpan(spec, async (traceparent) => {
      const ctx = this.contexts.create(spec, parent, traceparent);
      seed?.(ctx);
      this.limits.label(ctx, spec.priority, spec.definition.priority);
      if (await this.limits.admit(tx, ctx)) await this.advance(tx, ctx);
      return ctx;
    });
  }

  /**
   * Messaging's outcome handler: steps' messages were acknowledged or dead-lettered. A batch (one
   * batch acknowledgement) loads its runs in one locked read and saves them in one write (on
   * PostgreSQL), instead of a few round trips per message.
   */
  async onOutcomes(tx: Tx, outcomes: MessageOutcome[]): Promise<void> {
    const byRun = new Map<string, Signal[]>();
    for (const outcome of outcomes) {
      if (outcome.status === 'delivered') continue;
      const { runId, stepId, attempt } = parseAttemptRef(outcome.origin.ref);
      signalTo(byRun, runId, async (ctx) => {
        // An acknowledgement is the agent's request; a dead letter may be the reaper's.
        ctx.actor = outcome.status === 'acknowledged' ? outcome.destination : SYSTEM_ACTOR;
        const step = ctx.steps.get(stepId);
        if (!step) return false;
        return (await kindOfStep(ctx, step).onOutcome?.(tx, ctx, step, outcome, attempt, this.ports)) ?? false;
      });
    }
    await this.signal(tx, byRun);
  }

  /** Advances a run whose timer is due (the worker claimed it). */
  async wake(tx: Tx, run: RunRow): Promise<void> {
    await inResumeSpan(run, async () => this.resume(tx, await this.contexts.fromRow(tx, run)));
  }

  /** Advances a loaded run; a queued one first tries its plan's limits again. */
  private async resume(tx: Tx, ctx: RunContext): Promise<void> {
    if (ctx.run.status === 'queued') await this.limits.admit(tx, ctx);
    await this.advance(tx, ctx);
    await this.save(tx, [ctx]);
  }

  private async mustLoad(tx: Tx, runId: string): Promise<RunContext> {
    const ctx = await this.contexts.load(tx, runId);
    if (!ctx) throw new NotFound('Run', runId);
    return ctx;
  }

  /**
   * What an approval link shows (GET never decides): the run and the waiting step it is for,
   * checked as a decision through it would be.
   */
  async linkedStep(runId: string, stepId: string, claim?: ApprovalClaim): Promise<{ ctx: RunContext; step: StepState; def: StepTemplate }> {
    const ctx = await this.contexts.load(autocommit, runId, { lock: false });
    if (!ctx) throw new NotFound('Run', runId);
    return { ctx, ...waitingHumanStep(ctx, stepId, null, claim) };
  }

  /**
   * Decides a waiting human step of the decision's kind (an approval, an input) as `by`;
   * `reason` goes to the event log, `claim` when it comes through an approval link.
   */
  async decide(
    tx: Tx,
    runId: string,
    stepId: string,
    decision: HumanDecision,
    by: Decider,
    { reason, claim }: { reason?: string; claim?: ApprovalClaim } = {},
  ): Promise<void> {
    const ctx = await this.mustLoad(tx, runId);
    ctx.actor = by.actor;
    ctx.reason = reason ?? null;
    const { step, def } = waitingHumanStep(ctx, stepId, decision.type, claim);
    kindOf(def).decide!(ctx, step, def, decision, by);
    await this.advance(tx, ctx);
    await this.save(tx, [ctx]);
  }

  /**
   * A timer of a human step's wait (a reminder, an escalation), taken by `claim` with the run
   * locked (a decision locks the run, then drops the step's timers: the same order): `change`
   * moves the step when the timer was this transaction's to take and that wait still waits.
   */
  async onWaitTimer(
    tx: Tx,
    at: { runId: string; stepId: string; waitId: string; claim: () => Promise<boolean> },
    change: (ctx: RunContext, step: StepState, def: StepTemplate) => void,
  ): Promise<boolean> {
    const ctx = await this.contexts.load(tx, at.runId);
    if (!(await at.claim())) return false;
    const step = ctx?.steps.get(at.stepId);
    if (!ctx || !step || step.row.status !== 'waiting' || stepDetail(step).wait_id !== at.waitId) return false;
    change(ctx, step, definition(ctx, step));
    await this.save(tx, [ctx]);
    return true;
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

  /**
   * Restarts a failed run from its failed and cancelled steps; completed ones keep their output.
   * `by`: who asks (its actor, and the agent or actor recorded on the timeline); `reason` goes to
   * the event log. `resume`: a failed step whose redriven message goes on in its attempt, rather
   * than starting again.
   */
  async redrive(
    tx: Tx,
    runId: string,
    by: { actor: string; name: string; reason?: string },
    resume?: { stepId: string; messageId: string },
  ): Promise<void> {
    const ctx = await this.mustLoad(tx, runId);
    ctx.actor = by.actor;
    ctx.reason = by.reason ?? null;
    if (ctx.run.status !== 'failed') throw new Conflict(`Run '${runId}' is ${ctx.run.status}; only failed runs can be redriven`);
    const restarted: string[] = [];
    for (const step of ctx.steps.values()) {
      if (step.row.status !== 'failed' && step.row.status !== 'cancelled') continue;
      restarted.push(step.row.step_id);
      if (step.row.step_id === resume?.stepId) {
        kindOfStep(ctx, step).resume!(ctx, step, resume.messageId);
        continue;
      }
      const { tried } = stepDetail(step);
      changeStep(step, {
        ...NOT_STARTED,
        detail: JSON.stringify(tried ? { tried } : {}),
      });
    }
    Object.assign(ctx.run, { status: 'running', error: null, output: null, output_ref: null, completed_at: null });
    record(ctx, 'run.redriven', null, { by: by.name, steps: restarted });
    // Back under its plan's limits, as a start is.
    if (await this.limits.admit(tx, ctx)) await this.advance(tx, ctx);
    await this.save(tx, [ctx]);
  }

  /** A published event: resumes the steps waiting for its topic (a wait's match may still refuse it). */
  async onEvent(tx: Tx, event: PublishedEvent): Promise<void> {
    const byRun = new Map<string, Signal[]>();
    const waiters = (await this.deps.store.eventWaiters(tx)).filter((w) => topicMatches(w.wait_topic, event.topic));
    for (const runId of new Set(waiters.map((w) => w.run_id))) {
      const stepIds = waiters.filter((w) => w.run_id === runId).map((w) => w.step_id);
      signalTo(byRun, runId, async (ctx) => {
        let changed = false;
        for (const stepId of stepIds) {
          const step = ctx.steps.get(stepId);
          if (step && kindOfStep(ctx, step).onEvent?.(ctx, step, event)) changed = true;
        }
        return changed;
      });
    }
    await this.signal(tx, byRun);
  }

  /**
   * Discovery changed (an agent registered a capability): steps waiting for an agent look again
   * now rather than at their next recheck.
   */
  async onAgentsChanged(tx: Tx): Promise<void> {
    const byRun = new Map<string, Signal[]>();
    for (const { run_id, step_id } of await this.deps.store.agentWaiters(tx)) {
      signalTo(byRun, run_id, async (ctx) => {
        const step = ctx.steps.get(step_id);
        if (step?.row.status !== 'waiting' || step.row.wake_at === null) return false;
        changeStep(step, { wake_at: ctx.now });
        return true;
      });
    }
    await this.signal(tx, byRun);
  }

  /** A child run finished: its parent step takes its outcome. */
  private async childFinished(tx: Tx, child: RunRow): Promise<void> {
    const signal: Signal = async (ctx) => {
      const step = ctx.steps.get(child.parent_step_id!);
      return step !== undefined && (kindOfStep(ctx, step).onChildFinished?.(ctx, step, child) ?? false);
    };
    await this.signal(tx, new Map([[child.parent_run_id!, [signal]]]));
  }

  /**
   * Runs told of something outside (an outcome, an event, a child's end): each is loaded (locked,
   * in one read), each signal that moves it advances it, and the runs that moved are saved together.
   */
  private async signal(tx: Tx, byRun: Map<string, Signal[]>): Promise<void> {
    if (byRun.size === 0) return;
    const moved: RunContext[] = [];
    for (const ctx of await this.contexts.loadMany(tx, [...byRun.keys()])) {
      let changed = false;
      for (const signal of byRun.get(ctx.run.id)!) {
        if (!(await signal(ctx))) continue;
        await this.advance(tx, ctx);
        changed = true;
      }
      if (changed) moved.push(ctx);
    }
    await this.save(tx, moved);
  }

  // ── The transition loop ─────────────────────────────────────────────────────────────

  /** Fires due timers, starts ready steps and settles groups until nothing moves; then the run status. */
  private async advance(tx: Tx, ctx: RunContext): Promise<void> {
    if (RUN_FINISHED.has(ctx.run.status) || ctx.run.status === 'queued') return;
    for (let moved = true; moved && !ctx.failed;) {
      moved = false;
      const active = activeMembers(ctx);
      for (const step of [...ctx.steps.values()]) {
        if (ctx.failed) break;
        const { status, wake_at } = step.row;
        if (IN_FLIGHT.has(status) && wake_at !== null && wake_at <= ctx.now) {
          await this.onTimer(tx, ctx, step);
          moved = true;
        } else if (status === 'pending') {
          const ready = readiness(ctx, step, active);
          if (ready === 'skip') {
            skipStep(ctx, step, 'every step it depends on was skipped');
            moved = true;
          } else if (ready === 'start') {
            await startStep(tx, ctx, step, this.ports);
            const group = step.row.parent_step_id;
            if (group !== null && IN_FLIGHT.has(step.row.status)) active.set(group, (active.get(group) ?? 0) + 1);
            moved = true;
          }
        } else if (status === 'running') {
          moved = (await this.settle(tx, ctx, step)) || moved;
        }
      }
    }
    await this.settleRun(tx, ctx);
  }

  /** A running step that reflects its members (a group) completes or fails with them; true when it moved. */
  private async settle(tx: Tx, ctx: RunContext, step: StepState): Promise<boolean> {
    const def = definition(ctx, step);
    return (await kindOf(def).settle?.(tx, ctx, step, def, this.ports)) ?? false;
  }

  private async onTimer(tx: Tx, ctx: RunContext, step: StepState): Promise<void> {
    const def = definition(ctx, step);
    const kind = kindOf(def);
    // Only kinds with a timer set wake_at on an in-flight step.
    if (!kind.onTimer) throw new Error(`a ${def.type} step has no timer, yet wake_at is set on step '${step.row.step_id}'`);
    await kind.onTimer(tx, ctx, step, def, this.ports);
  }

  /** Stops what a running step has in flight outside the run (its kind knows what). */
  private async withdraw(tx: Tx, ctx: RunContext, step: StepState, reason: string): Promise<void> {
    if (step.row.status !== 'running') return;
    await kindOfStep(ctx, step).withdraw?.(tx, ctx, step, reason, this.ports);
  }

  // ── Run outcome ─────────────────────────────────────────────────────────────────────

  private async settleRun(tx: Tx, ctx: RunContext): Promise<void> {
    const failed = ctx.failed;
    if (failed) {
      // A group whose member failed fails with it (rather than showing as cancelled).
      for (const step of ctx.steps.values()) if (step.row.status === 'running') await this.settle(tx, ctx, step);
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
      const end = await runEnd(tx, ctx, this.ports.readOutput);
      finishRun(ctx, end.status, end.output, end.error);
      return;
    }
    // Waiting: nothing moves until a person, a timer or an event does (groups only reflect their members).
    const members = open.filter((s) => !(s.row.status === 'running' && kindOfStep(ctx, s).settle));
    const outside = (s: StepState) =>
      s.row.status === 'waiting' || (s.row.status === 'running' && kindOfStep(ctx, s).waitsOutside === true);
    const blockedOnOutside = members.some(outside) && members.every((s) => outside(s) || s.row.status === 'pending');
    const status: RunStatus = blockedOnOutside ? 'waiting' : 'running';
    if (status !== ctx.run.status) record(ctx, status === 'waiting' ? 'run.waiting' : 'run.resumed', null);
    let wakeAt: number | null = null;
    for (const s of open) if (s.row.wake_at !== null && (wakeAt === null || s.row.wake_at < wakeAt)) wakeAt = s.row.wake_at;
    Object.assign(ctx.run, { status, wake_at: wakeAt });
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
      if (
        run.wake_at !== null &&
        (planned === 0 || run.wake_at < planned) &&
        (ctx.initialWakeAt === null || run.wake_at < ctx.initialWakeAt)
      ) {
        wakeTimers = true;
      }
      const ended = RUN_FINISHED.has(run.status) && !RUN_FINISHED.has(ctx.initialStatus);
      if (ended && run.parent_run_id && !ctx.parentInMemory) await this.childFinished(tx, run);
      // A run that held a slot of its plan's concurrency frees it for the next queued run.
      if (ended && run.concurrency_key !== null && run.admitted_at !== null) {
        const next = await this.limits.nextQueued(tx, run.plan_id, run.concurrency_key);
        const queued = next === undefined ? null : await this.contexts.load(tx, next);
        if (queued?.run.status === 'queued') await this.resume(tx, queued);
      }
    }
    if (wakeTimers) await this.deps.notifier.notifyIn(tx, COORDINATION_CHANGED);
  }
}
