import type { Tx } from '../kernel/tx.js';
import type { ClaimChecks, MessageOutcome, PayloadRef, SignedPayloadRef } from '../kernel/ports.js';
import { parseAttemptRef } from './steps/index.js';
import type { RunStepRow } from './run-list-store.js';

/** A run's steps' references with fresh signed URLs, by `<run_id>/<step_id>`. */
export type SignedStepRefs = ReadonlyMap<string, { output_ref?: SignedPayloadRef; input_ref?: SignedPayloadRef }>;

const keyOf = (row: Pick<RunStepRow, 'run_id' | 'step_id'>) => `${row.run_id}/${row.step_id}`;

/**
 * Large step outputs and inputs by reference, as coordination uses them: the run holds the
 * artifact of an output that came by reference (so it outlives the step's message until the
 * run goes), and answers carry each reference with a fresh signed URL. The artifacts are the
 * ClaimChecks port's, bound once artifacts exist.
 */
export class StepRefs {
  private checks: ClaimChecks | null = null;

  useClaimChecks(checks: ClaimChecks): void {
    this.checks = checks;
  }

  /** The runs of these acknowledgements hold their outputs' artifacts. */
  async holdOutputs(tx: Tx, outcomes: readonly MessageOutcome[]): Promise<void> {
    const holds = outcomes.flatMap((o) =>
      o.output_ref === undefined ? [] : [{ artifact_id: o.output_ref.artifact_id, holder: parseAttemptRef(o.origin.ref).runId }],
    );
    if (holds.length > 0 && this.checks !== null) await this.checks.hold(tx, holds);
  }

  /** The runs are gone: so are the artifacts only they held. */
  async release(runIds: readonly string[]): Promise<number> {
    if (runIds.length === 0 || this.checks === null) return 0;
    return this.checks.release(runIds);
  }

  async sign(steps: readonly RunStepRow[]): Promise<SignedStepRefs> {
    const signed = new Map<string, { output_ref?: SignedPayloadRef; input_ref?: SignedPayloadRef }>();
    const checks = this.checks;
    if (checks === null) return signed;
    for (const row of steps) {
      if (row.output_ref === null && row.input_ref === null) continue;
      const refs: { output_ref?: SignedPayloadRef; input_ref?: SignedPayloadRef } = {};
      if (row.output_ref !== null) refs.output_ref = await checks.sign(JSON.parse(row.output_ref) as PayloadRef);
      if (row.input_ref !== null) refs.input_ref = await checks.sign(JSON.parse(row.input_ref) as PayloadRef);
      signed.set(keyOf(row), refs);
    }
    return signed;
  }

  static refsOf(signed: SignedStepRefs, row: Pick<RunStepRow, 'run_id' | 'step_id'>) {
    return signed.get(keyOf(row));
  }
}
