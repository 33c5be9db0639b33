import { autocommit, type Tx } from '../kernel/tx.js';
import { InvalidRequest } from '../kernel/errors.js';
import type { Readable } from 'node:stream';
import type { ClaimChecks, OutgoingMessage, PayloadOwner, PayloadRef, SignedPayloadRef, StagedJson } from '../kernel/ports.js';
import { StagedPayload } from '../kernel/ports.js';
import { STEP_INPUT_REF } from './messages.js';

/** What a message carries when its payload or output travels by reference. */
export interface Refs {
  payload?: unknown;
  payload_ref?: PayloadRef | SignedPayloadRef;
  output_ref?: PayloadRef | SignedPayloadRef;
  [STEP_INPUT_REF]?: PayloadRef;
}

/**
 * Large payloads by reference, as messaging uses them: a sender's payload over the inline
 * limit is offloaded to an artifact before the send, a reference the sender gives is adopted,
 * and every reference a reader gets carries a fresh signed URL. The artifacts themselves are
 * the ClaimChecks port's (bound once artifacts exist, as outcome handlers are).
 */
export class PayloadRefs {
  private checks: ClaimChecks | null = null;

  constructor(private readonly inlineBytes: number) {}

  useClaimChecks(checks: ClaimChecks): void {
    this.checks = checks;
  }

  /** The inline limit: JSON text over it travels by reference. */
  get inlineLimit(): number {
    return this.inlineBytes;
  }

  /** Streams a payload's JSON text to storage (null while no artifacts are bound: then nothing is streamed). */
  get stager(): ((source: Readable) => Promise<StagedJson>) | null {
    const checks = this.checks;
    return checks === null ? null : (source) => checks.stage(source);
  }

  /** The JSON text of `value` when it is over the inline limit (to offload), else null. */
  oversized(value: unknown): Buffer | null {
    if (this.checks === null) return null;
    const text = JSON.stringify(value ?? {});
    // Bytes are at most 3× the UTF-16 length: most values are decided without encoding them.
    if (text.length * 3 <= this.inlineBytes) return null;
    const bytes = Buffer.from(text);
    return bytes.length > this.inlineBytes ? bytes : null;
  }

  /**
   * A sender's messages with their large payloads offloaded and the references it gave adopted.
   * When one of them fails, what the others offloaded is discarded.
   */
  async prepare(owner: PayloadOwner, messages: readonly OutgoingMessage[]): Promise<OutgoingMessage[]> {
    const checks = this.checks;
    // A staged payload sent to several destinations becomes one artifact that all of them may read.
    const offloaded = new Map<StagedPayload, Promise<PayloadRef>>();
    const settled = await Promise.allSettled(
      messages.map(async (message, i): Promise<OutgoingMessage> => {
        const given = message.payload_ref;
        if (given !== undefined) {
          if (message.payload !== undefined) {
            throw InvalidRequest.field(
              messages.length > 1 ? `messages.${i}.payload_ref` : 'payload_ref',
              'and payload are exclusive; send one',
            );
          }
          if (checks === null) throw InvalidRequest.field('payload_ref', 'is not supported by this server');
          return { ...message, payload_ref: await checks.adopt(owner, given.artifact_id, [message.destination]) };
        }
        if (message.payload instanceof StagedPayload && checks !== null) {
          const { payload: staged, ...rest } = message;
          const first = offloaded.get(staged);
          if (first === undefined) {
            const ref = checks.offload(owner, staged.json, [message.destination]);
            offloaded.set(staged, ref);
            return { ...rest, payload_ref: await ref };
          }
          return { ...rest, payload_ref: await checks.adopt(owner, (await first).artifact_id, [message.destination]) };
        }
        const bytes = this.oversized(message.payload);
        if (bytes === null || checks === null) return message;
        const { payload: _inline, ...rest } = message;
        return { ...rest, payload_ref: await checks.offload(owner, bytes, [message.destination]) };
      }),
    );
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed === undefined) return settled.map((result) => (result as PromiseFulfilledResult<OutgoingMessage>).value);
    await this.discard(
      messages,
      settled.map((result) => (result.status === 'fulfilled' ? result.value : undefined)),
    );
    throw failed.reason;
  }

  /**
   * The send of `prepared` failed (or was a replay): the artifacts `prepare` offloaded for it are
   * deleted, not those the sender gave. Best effort: retention deletes what nothing holds later.
   */
  async discard(given: readonly OutgoingMessage[], prepared: readonly (OutgoingMessage | undefined)[]): Promise<void> {
    const ids = prepared.flatMap((message, i) =>
      message?.payload_ref !== undefined && given[i]!.payload_ref === undefined ? [message.payload_ref.artifact_id] : [],
    );
    await this.discardIds(ids);
  }

  /** An offload whose request failed, or that nothing took (a publish nobody subscribes to): deleted unless a message holds it. */
  async discardUnheld(ref: PayloadRef): Promise<void> {
    await this.discardIds([ref.artifact_id]);
  }

  private async discardIds(ids: readonly string[]): Promise<void> {
    if (ids.length > 0 && this.checks !== null) await this.checks.discard(ids).catch(() => 0);
  }

  /** A value over the inline limit (an acknowledgement's output, a published payload), or one streamed to storage, kept as an artifact `readers` may read. */
  async offload(owner: PayloadOwner, value: unknown, readers: readonly string[]): Promise<PayloadRef | null> {
    if (this.checks === null) return null;
    if (value instanceof StagedPayload) return this.checks.offload(owner, value.json, readers);
    const bytes = this.oversized(value);
    return bytes === null ? null : this.checks.offload(owner, bytes, readers);
  }

  /** The value of an offloaded payload, read back whole (for those that keep it as a value). */
  async read(ref: PayloadRef): Promise<unknown> {
    if (this.checks === null) throw new Error('a payload is stored by reference, but no artifacts are bound');
    return JSON.parse((await this.checks.read(autocommit, ref)).toString('utf8')) as unknown;
  }

  /** Lets `readers` read an artifact `owner` made (an output's producers). */
  async share(owner: PayloadOwner, ref: PayloadRef, readers: readonly string[]): Promise<void> {
    if (this.checks !== null && readers.length > 0) await this.checks.adopt(owner, ref.artifact_id, readers);
  }

  /** Records which messages carry which references (they go with the last of them). */
  async hold(tx: Tx, holds: { ref: PayloadRef | { artifact_id: string } | undefined | null; holder: string }[]): Promise<void> {
    const rows = holds.flatMap((h) => (h.ref ? [{ artifact_id: h.ref.artifact_id, holder: h.holder }] : []));
    if (rows.length > 0 && this.checks !== null) await this.checks.hold(tx, rows);
  }

  /** The messages are gone: their offloaded artifacts go too, unless another message holds them. */
  async release(holders: readonly string[]): Promise<number> {
    if (holders.length === 0 || this.checks === null) return 0;
    return this.checks.release(holders);
  }

  /** The messages with a fresh signed URL in each reference. */
  async sign<T extends Refs>(messages: T[]): Promise<T[]> {
    const checks = this.checks;
    if (checks === null) return messages;
    const signed = async (ref: PayloadRef | SignedPayloadRef | undefined) =>
      ref === undefined ? undefined : 'version' in ref ? checks.sign(ref) : ref;
    return Promise.all(
      messages.map(async (message) => {
        const inputRef = message[STEP_INPUT_REF];
        if (message.payload_ref === undefined && message.output_ref === undefined && inputRef === undefined) return message;
        const copy = { ...message };
        if (inputRef !== undefined) copy.payload = { ...(message.payload as object), input_ref: await checks.sign(inputRef) };
        if (message.payload_ref !== undefined) copy.payload_ref = await signed(message.payload_ref);
        if (message.output_ref !== undefined) copy.output_ref = await signed(message.output_ref);
        return copy;
      }),
    );
  }
}
