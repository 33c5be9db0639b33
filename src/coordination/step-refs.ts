import type { Tx } from '../kernel/tx.js';
import type { ClaimChecks, MessageOutcome, PayloadRef, SignedPayloadRef } from '../kernel/ports.js';
import { parseAttemptRef } from './steps/index.js';
import type { RunRow, RunStepRow } from './run-list-store.js';
import { PLATFORM_SENDER, type RunContext } from './run-state.js';

/** Who owns the artifacts of large step inputs: the platform, which sends step messages. */
const PLATFORM_OWNER = { actor: PLATFORM_SENDER, agentId: null, admin: true };

/** Steps' references with fresh signed URLs, by `<run_id>/<step_id>`, and runs' output references, by run id. */
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

  constructor(private readonly inlineBytes: number) {}

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

  /** The run holds the artifacts its steps' rows name (a rerun's reused steps). */
  async holdSteps(tx: Tx, runId: string, steps: readonly RunStepRow[]): Promise<void> {
    const holds = steps.flatMap((row) =>
      [row.output_ref, row.input_ref].flatMap((ref) =>
        ref === null ? [] : [{ artifact_id: (JSON.parse(ref) as PayloadRef).artifact_id, holder: runId }],
      ),
    );
    if (holds.length > 0 && this.checks !== null) await this.checks.hold(tx, holds);
  }

  /** A value's JSON text as bytes when it is over the inline limit, else null. */
  private overLimit(text: string | null): Buffer | null {
    // Bytes are at most 3× the UTF-16 length: most values are decided without encoding them.
    if (text === null || text.length * 3 <= this.inlineBytes) return null;
    const bytes = Buffer.from(text);
    return bytes.length > this.inlineBytes ? bytes : null;
  }

  /** An artifact of the platform that `readers` may read, held by the run, made in the transition's transaction. */
  private async offload(tx: Tx, checks: ClaimChecks, bytes: Buffer, readers: readonly string[], runId: string): Promise<PayloadRef> {
    const ref = await checks.offloadIn(tx, PLATFORM_OWNER, bytes, readers);
    await checks.hold(tx, [{ artifact_id: ref.artifact_id, holder: runId }]);
    return ref;
  }

  /** Step messages whose input is over the inline limit carry it as `input_ref` (input null), readable by the step's agent. */
  async offloadInputs(tx: Tx, outbox: RunContext['outbox']): Promise<void> {
    const checks = this.checks;
    if (checks === null) return;
    for (const entry of outbox) {
      const bytes = this.overLimit(entry.step.row.input);
      const payload = entry.message.payload as Record<string, unknown> | undefined;
      if (bytes === null || payload === undefined || !('input' in payload)) continue;
      const ref = await this.offload(tx, checks, bytes, [entry.message.destination], entry.step.row.run_id);
      entry.message = { ...entry.message, payload: { ...payload, input: null, input_ref: ref } };
      entry.step.row.input_ref = JSON.stringify(ref);
      entry.step.dirty = true;
    }
  }

  /**
   * Step outputs the platform made over the inline limit (a group's, a transform's, a sub-plan's,
   * a person's input), and runs' outputs, are kept by reference too, as acknowledged ones are:
   * no run or step row holds a large value. A step's value stays in memory for the rest of the
   * transition.
   */
  async offloadOutputs(tx: Tx, contexts: readonly RunContext[]): Promise<void> {
    const checks = this.checks;
    if (checks === null) return;
    const holds: { artifact_id: string; holder: string }[] = [];
    for (const ctx of contexts) {
      for (const step of ctx.steps.values()) {
        if (!step.dirty) continue;
        // A sub_plan step takes its child run's output by reference: the parent run holds it too.
        if (step.row.child_run_id !== null && step.row.output_ref !== null) {
          holds.push({ artifact_id: (JSON.parse(step.row.output_ref) as PayloadRef).artifact_id, holder: step.row.run_id });
        }
        const bytes = this.overLimit(step.row.output);
        if (bytes === null) continue;
        step.row.output_ref = JSON.stringify(await this.offload(tx, checks, bytes, [], step.row.run_id));
        step.row.output = null;
      }
      const bytes = this.overLimit(ctx.run.output);
      if (bytes === null) continue;
      ctx.run.output_ref = JSON.stringify(await this.offload(tx, checks, bytes, [], ctx.run.id));
      ctx.run.output = null;
    }
    if (holds.length > 0) await checks.hold(tx, holds);
  }

  /** A step output kept only as its reference (run_steps.output_ref), read back from its artifact. */
  async readOutput(tx: Tx, ref: string): Promise<unknown> {
    if (this.checks === null) throw new Error('a step output is stored by reference, but no artifacts are bound');
    return JSON.parse((await this.checks.read(tx, JSON.parse(ref) as PayloadRef)).toString('utf8')) as unknown;
  }

  /** The runs are gone: so are the artifacts only they held. */
  async release(runIds: readonly string[]): Promise<number> {
    if (runIds.length === 0 || this.checks === null) return 0;
    return this.checks.release(runIds);
  }

  /** The references of these steps and runs (`runs`: their outputs), signed. */
  async sign(steps: readonly RunStepRow[], runs: readonly RunRow[] = []): Promise<SignedStepRefs> {
    const signed = new Map<string, { output_ref?: SignedPayloadRef; input_ref?: SignedPayloadRef }>();
    const checks = this.checks;
    if (checks === null) return signed;
    for (const run of runs) {
      if (run.output_ref !== null) signed.set(run.id, { output_ref: await checks.sign(JSON.parse(run.output_ref) as PayloadRef) });
    }
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
