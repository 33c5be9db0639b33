import type { Body, CallInput, DomainClient, RawBody } from './types.js';

/** What offloading uploads with (the client's `artifacts.uploadStream`). */
interface Uploader {
  uploadStream(
    input: Omit<Body<'artifacts.createUploadUrl'>, 'expires_in'> & { body: RawBody; signal?: AbortSignal },
  ): Promise<{ id: string }>;
}

/** The server's default `SWITCHBOARD_INLINE_PAYLOAD_BYTES`: payloads larger than this travel by reference. */
export const DEFAULT_INLINE_PAYLOAD_BYTES = 256 * 1024;

/** A payload (or step input, or output) stored as an artifact: a signed URL that needs no API key, and what its bytes are. */
export interface PayloadRef {
  artifact_id: string;
  url: string;
  size_bytes: number;
  sha256: string;
}

/** The referenced payload's bytes did not match its reference (size or sha256). */
export class PayloadRefMismatchError extends Error {
  override name = 'PayloadRefMismatchError';
}

/** sha256 of bytes, hex (WebCrypto: Node ≥ 22 and browsers alike). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The UTF-8 JSON text of a payload when it is larger than `limit` bytes (to send by reference), else null. */
export function oversizedJson(payload: unknown, limit: number): Uint8Array | null {
  const text = JSON.stringify(payload ?? {});
  // Bytes are at most 3× the UTF-16 length: most payloads are decided without encoding them.
  if (text.length * 3 <= limit) return null;
  const bytes = new TextEncoder().encode(text);
  return bytes.length > limit ? bytes : null;
}

/**
 * The messaging client whose sends upload payloads over `limit` bytes as artifacts and send
 * `payload_ref`, declaring the bytes' sha256 (`hash`), which the server checks them against.
 */
export function offloading(
  messaging: DomainClient<'messaging'>,
  artifacts: Uploader,
  limit: number,
  hash: (bytes: Uint8Array) => Promise<string>,
): DomainClient<'messaging'> {
  const offload = async <P extends { payload?: unknown; payload_ref?: { artifact_id: string } }>(message: P, signal?: AbortSignal) => {
    const bytes = message.payload_ref === undefined ? oversizedJson(message.payload, limit) : null;
    if (bytes === null) return message;
    const artifact = await artifacts.uploadStream({
      name: 'payload.json',
      content_type: 'application/json',
      size_bytes: bytes.length,
      sha256: await hash(bytes),
      // Deleted with the message under retention, as the server's own offloads are.
      metadata: { claim_check: true },
      body: bytes,
      ...(signal ? { signal } : {}),
    });
    const { payload: _inline, ...rest } = message;
    return { ...rest, payload_ref: { artifact_id: artifact.id } } as P;
  };
  const { send, sendBatch } = messaging;
  return Object.assign(messaging, {
    send: async (input: CallInput<'messaging.send'>) => send({ ...input, body: await offload(input.body, input.signal) }),
    sendBatch: async (input: CallInput<'messaging.sendBatch'>) =>
      sendBatch({
        ...input,
        body: { ...input.body, messages: await Promise.all(input.body.messages.map((m) => offload(m, input.signal))) },
      }),
  });
}
