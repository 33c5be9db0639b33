import type { Readable } from 'node:stream';
import type { Tx } from './tx.js';

/** A payload stored as an artifact: which one, and what its bytes are. */
export interface PayloadRef {
  artifact_id: string;
  version: number;
  size_bytes: number;
  sha256: string;
}

/** A PayloadRef as receivers get it: with a signed GET URL of its content that needs no API key. */
export interface SignedPayloadRef {
  artifact_id: string;
  url: string;
  size_bytes: number;
  sha256: string;
}

/** Who offloads or adopts a payload: its sender. */
export interface PayloadOwner {
  actor: string;
  agentId: string | null;
  admin: boolean;
}

/** JSON text streamed to storage and not kept yet: `ClaimChecks.offload` keeps it, else `discard` drops it. */
export interface StagedJson {
  readonly sha256: string;
  readonly size: number;
  discard(): Promise<void>;
}

/**
 * A JSON value that arrived too large to be parsed into memory: its compact JSON text (as
 * JSON.stringify writes it), streamed to storage as the request body came in.
 */
export class StagedPayload {
  constructor(readonly json: StagedJson) {}

  /** It stands for a value that is not in memory: serializing it would lose the payload. */
  toJSON(): never {
    throw new Error('a staged payload has no value in memory');
  }
}

/**
 * Implemented by artifacts: large payloads by reference (claim checks). A payload stored here
 * is an artifact owned by its sender, shared with its receivers, held by the messages or runs
 * that carry it, and deleted when the last of them is.
 */
export interface ClaimChecks {
  /** Stores a payload's JSON text as an artifact of `owner` that `readers` may read. */
  offload(owner: PayloadOwner, json: Buffer | StagedJson, readers: readonly string[]): Promise<PayloadRef>;
  /** Streams JSON text to storage (bounded by the upload limit) for a later `offload`. */
  stage(source: Readable): Promise<StagedJson>;
  /** `offload` inside the caller's transaction (a run's step message, sent with its transition). */
  offloadIn(tx: Tx, owner: PayloadOwner, json: Buffer, readers: readonly string[]): Promise<PayloadRef>;
  /** An artifact the sender made itself: 404/403 unless it may read it; then `readers` may too. */
  adopt(owner: PayloadOwner, artifactId: string, readers: readonly string[]): Promise<PayloadRef>;
  /** Records that `holder` (a message or run id) carries the artifact: it stays while any holder does. */
  hold(tx: Tx, holds: readonly { artifact_id: string; holder: string }[]): Promise<void>;
  /** The holders are gone: their claim-check artifacts that nothing else holds are deleted. */
  release(holders: readonly string[]): Promise<number>;
  /** The sends of these offloaded artifacts failed: those nothing holds are deleted (never an artifact a sender made). */
  discard(artifactIds: readonly string[]): Promise<number>;
  /** The reference with a fresh signed URL. */
  sign(ref: PayloadRef): Promise<SignedPayloadRef>;
  /** The payload's JSON text (a run reading a step output it holds). */
  read(tx: Tx, ref: PayloadRef): Promise<Buffer>;
}
