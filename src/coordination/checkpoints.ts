import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, NotFound, PayloadTooLarge } from '../kernel/errors.js';
import type { Inbox } from '../kernel/ports.js';
import type { Tx } from '../kernel/tx.js';
import type { Caller } from './caller.js';
import type { CheckpointRow, StepWorkStore } from './step-work-store.js';

/** The largest checkpoint state, as JSON; more belongs in an artifact the agent owns. */
export const MAX_CHECKPOINT_BYTES = 1024 * 1024;
/** The payload field of a step message that carries the step's latest checkpoint. */
export const CHECKPOINT_FIELD = 'checkpoint';

/** A step's latest checkpoint, as agents and the run answer see it. */
export interface Checkpoint {
  state: unknown;
  saved_at: string;
  attempt: number;
}

export const toCheckpoint = (row: CheckpointRow): Checkpoint => ({
  state: JSON.parse(row.state) as unknown,
  saved_at: iso(row.saved_at),
  attempt: row.attempt,
});

/**
 * The step `caller` is executing, its run locked: only the agent of a running step's current
 * attempt writes to it (404 for no such step, 403 for another agent, 409 once it stopped).
 */
export async function executingStep(store: StepWorkStore, tx: Tx, caller: Caller, runId: string, stepId: string) {
  const step = await store.lockedStep(tx, runId, stepId);
  if (!step) throw new NotFound('Step', `${runId}/${stepId}`);
  if (step.agent_id === null || caller.agentId !== step.agent_id) {
    throw new Forbidden(`Only the agent executing step '${stepId}' (${step.agent_id ?? 'none'}) may write to it`);
  }
  if (step.status !== 'running') throw new Conflict(`Step '${stepId}' of run '${runId}' is ${step.status}, not running`);
  return step;
}

/**
 * Checkpoints: the agent executing a step saves its progress; the step's pending message carries
 * the latest (a redelivery after the agent died), and so does the message of its next attempt.
 */
export class CheckpointService {
  constructor(private readonly deps: { store: StepWorkStore; inbox: Inbox; clock: Clock }) {}

  async save(caller: Caller, runId: string, stepId: string, state: unknown): Promise<Checkpoint> {
    const text = JSON.stringify(state);
    if (Buffer.byteLength(text) > MAX_CHECKPOINT_BYTES) {
      throw new PayloadTooLarge(`A checkpoint's state is at most ${MAX_CHECKPOINT_BYTES} bytes of JSON; keep larger state in an artifact`);
    }
    const { store, inbox, clock } = this.deps;
    return store.inTransaction(async (tx) => {
      const step = await executingStep(store, tx, caller, runId, stepId);
      const row: CheckpointRow = { run_id: runId, step_id: stepId, state: text, attempt: step.attempt, saved_at: clock.now() };
      await store.saveCheckpoint(tx, row);
      const checkpoint = toCheckpoint(row);
      if (step.message_id !== null) await inbox.setPayloadField(tx, step.message_id, CHECKPOINT_FIELD, checkpoint);
      return checkpoint;
    });
  }
}
