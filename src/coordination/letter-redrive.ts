import { Conflict } from '../kernel/errors.js';
import type { RedrivenLetter } from '../kernel/ports.js';
import type { Tx } from '../kernel/tx.js';
import type { RunEngine } from './engine.js';
import type { StepWorkStore } from './step-work-store.js';
import { parseAttemptRef } from './steps/index.js';

/**
 * A plan step's dead letter was redriven: when it is what failed its step (and with it the run),
 * the run goes on from there, the step awaiting the redriven message in the same attempt; a
 * cancelled or rerun run refuses the redrive (a rerun carries the run on instead). Any other letter (an attempt the step moved past, a run
 * that went on or was deleted) is redriven as a message only: its outcome changes no run.
 */
export async function continueFromLetter(tx: Tx, deps: { store: StepWorkStore; engine: RunEngine }, letter: RedrivenLetter): Promise<void> {
  const { runId, stepId, attempt } = parseAttemptRef(letter.origin.ref);
  const step = await deps.store.lockedStep(tx, runId, stepId);
  if (!step) return;
  if (step.run_status === 'cancelled') {
    throw new Conflict(`Run '${runId}' was cancelled: the dead letter of its step '${stepId}' cannot continue it`);
  }
  const rerun = await deps.store.rerunOf(tx, runId);
  if (rerun !== undefined) {
    throw new Conflict(`Run '${runId}' was rerun as '${rerun}': the dead letter of its step '${stepId}' cannot continue it`);
  }
  const failedHere = step.status === 'failed' && step.message_id === letter.message_id && String(step.attempt) === attempt;
  if (step.run_status !== 'failed' || !failedHere) return;
  await deps.engine.redrive(
    tx,
    runId,
    { actor: letter.actor, name: letter.actor, reason: `dead letter ${letter.message_id} redriven` },
    { stepId, messageId: letter.redriven_as },
  );
}
