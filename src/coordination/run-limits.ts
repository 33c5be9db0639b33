import type { Tx } from '../kernel/tx.js';
import type { RunLimitsStore } from './run-limits-store.js';
import { changeStep, FINISHED, finishRun, record, templateScope, type RunContext } from './run-state.js';
import type { RunBlockedBy } from './tables.js';
import { render, TemplateError } from './templates.js';

/** A run's priority when neither its plan nor its start names one. */
export const DEFAULT_RUN_PRIORITY = 4;

/**
 * A plan's run limits: how many of its runs are active at once (per concurrency key) and how many
 * start per period (per rate key). A run over a limit is `queued` (or cancelled, as the plan says);
 * queued runs start in priority then arrival order as slots free up. Every decision is taken with
 * the plan locked, so two nodes never let the same slot through twice.
 */
export class RunLimits {
  constructor(
    private readonly deps: {
      store: RunLimitsStore;
      /** Cancels an active run (cancel_oldest makes room with it). */
      cancel: (tx: Tx, runId: string, reason: string) => Promise<unknown>;
    },
  ) {}

  /** A new run's priority (the start's, else its plan's) and the values of its plan's limit keys. */
  label(ctx: RunContext, priority: number | undefined, planPriority: number | undefined): void {
    const { concurrency, rateLimit } = ctx.plan;
    ctx.run.priority = priority ?? planPriority ?? DEFAULT_RUN_PRIORITY;
    ctx.run.concurrency_key = concurrency ? keyOf(ctx, concurrency.key) : null;
    ctx.run.rate_key = rateLimit ? keyOf(ctx, rateLimit.key) : null;
  }

  /**
   * Lets a new or queued run through its plan's limits, or queues it (or cancels it): true when
   * it runs now. A run over its plan's concurrency with `cancel_oldest` cancels the oldest active run.
   */
  async admit(tx: Tx, ctx: RunContext): Promise<boolean> {
    const verdict = await this.verdict(tx, ctx);
    if (verdict.kind === 'queue') {
      const { blockedBy, wakeAt } = verdict;
      if (ctx.run.status !== 'queued' || ctx.run.blocked_by !== blockedBy) record(ctx, 'run.queued', null, { blocked_by: blockedBy });
      Object.assign(ctx.run, { status: 'queued', blocked_by: blockedBy, wake_at: wakeAt });
      return false;
    }
    if (verdict.kind === 'cancel') {
      for (const step of ctx.steps.values())
        if (!FINISHED.has(step.row.status)) changeStep(step, { status: 'cancelled', completed_at: ctx.now });
      finishRun(ctx, 'cancelled', null, verdict.reason);
      return false;
    }
    if (verdict.kind === 'replace')
      await this.deps.cancel(tx, verdict.runId, `cancelled for a newer run (${ctx.run.id}) by the plan's concurrency limit`);
    if (ctx.run.status === 'queued') record(ctx, 'run.dequeued', null, {});
    Object.assign(ctx.run, { status: 'running', blocked_by: null, wake_at: null, admitted_at: ctx.now });
    return true;
  }

  /** The queued run of `concurrencyKey` that takes a slot a run of the plan freed (the plan locked first). */
  async nextQueued(tx: Tx, planId: string, concurrencyKey: string): Promise<string | undefined> {
    await this.deps.store.lockPlan(tx, planId);
    return this.deps.store.nextQueued(tx, planId, concurrencyKey);
  }

  private async verdict(tx: Tx, ctx: RunContext): Promise<Verdict> {
    const { concurrency, rateLimit } = ctx.plan;
    if (!concurrency && !rateLimit) return { kind: 'start' };
    const { store } = this.deps;
    const planId = ctx.run.plan_id;
    await store.lockPlan(tx, planId);
    if (rateLimit) {
      const period = rateLimit.period_s * 1000;
      const recent = await store.admittedSince(tx, planId, ctx.run.rate_key!, ctx.now - period, rateLimit.limit);
      // Queued until the oldest start of the window leaves it.
      if (recent.length >= rateLimit.limit) return { kind: 'queue', blockedBy: 'rate_limit', wakeAt: recent[0]! + period };
      // The free slots go to the queued runs before this one first (they are due: the window let
      // them through); this one waits for the window after theirs.
      const free = rateLimit.limit - recent.length;
      if ((await store.queuedAhead(tx, planId, ctx.run.rate_key!, ctx.run, free)) >= free)
        return { kind: 'queue', blockedBy: 'rate_limit', wakeAt: (recent[0] ?? ctx.now) + period };
    }
    if (concurrency) {
      const active = await store.activeRuns(tx, planId, ctx.run.concurrency_key!, concurrency.limit);
      if (active.length >= concurrency.limit) {
        switch (concurrency.on_limit ?? 'queue') {
          case 'queue':
            return { kind: 'queue', blockedBy: 'concurrency', wakeAt: null };
          case 'cancel_new':
            return { kind: 'cancel', reason: `the plan's concurrency limit (${concurrency.limit}) was reached` };
          case 'cancel_oldest':
            return { kind: 'replace', runId: active[0]! };
        }
      }
    }
    return { kind: 'start' };
  }
}

type Verdict =
  | { kind: 'start' }
  | { kind: 'queue'; blockedBy: RunBlockedBy; wakeAt: number | null }
  | { kind: 'cancel'; reason: string }
  | { kind: 'replace'; runId: string };

/** A limit key's value for the run ('' for none, or a template its input cannot fill). */
function keyOf(ctx: RunContext, template: string | undefined): string {
  if (template === undefined) return '';
  try {
    const value = render(template, templateScope(ctx, null));
    return value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  } catch (err) {
    if (err instanceof TemplateError) return '';
    throw err;
  }
}
