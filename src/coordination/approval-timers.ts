import type { Clock } from '../kernel/clock.js';
import { autocommit } from '../kernel/tx.js';
import type { ApprovalTimerStore } from './approval-timer-store.js';
import type { RunEngine } from './engine.js';
import { escalate, remind } from './steps/human.js';

/** Timers fired per pass (the next pass takes the rest at once). */
const BATCH = 100;

/**
 * Fires human steps' due reminders and escalations, for the run timer. Each timer is claimed
 * (deleted) in the transaction that fires it, so it fires once however many nodes look, and a
 * timer of a wait that ended (decided, cancelled, redriven) is dropped.
 */
export class ApprovalTimers {
  constructor(private readonly deps: { store: ApprovalTimerStore; engine: Pick<RunEngine, 'onWaitTimer'>; clock: Clock }) {}

  /** Fires what is due; true when a full batch was due (more may be). */
  async fireDue(): Promise<boolean> {
    const { store, engine } = this.deps;
    const due = await store.due(autocommit, this.deps.clock.now(), BATCH);
    for (const timer of due) {
      await store.inTransaction(async (tx) => {
        const at = { runId: timer.run_id, stepId: timer.step_id, waitId: timer.wait_id, claim: () => store.claim(tx, timer.id) };
        await engine.onWaitTimer(tx, at, timer.kind === 'remind' ? remind : escalate);
      });
    }
    return due.length === BATCH;
  }

  nextDueAt(): Promise<number | null> {
    return this.deps.store.nextDueAt(autocommit);
  }
}
