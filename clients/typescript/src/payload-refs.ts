import type { Body, CallInput, DomainClient, Message, RawBody } from './types.js';

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

function hex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** sha256 of bytes, hex (WebCrypto: Node ≥ 22 and browsers alike). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return hex(await globalThis.crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
}

/** The value a reference stands for: its URL's JSON text, checked against the reference's size and sha256. */
export async function fetchPayloadRef(ref: PayloadRef, signal?: AbortSignal): Promise<unknown> {
  const response = await fetch(ref.url, signal ? { signal } : {});
  if (!response.ok) throw new Error(`payload reference ${ref.artifact_id}: GET answered ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes.length !== ref.size_bytes) {
    throw new PayloadRefMismatchError(`payload reference ${ref.artifact_id}: ${bytes.length} bytes, expected ${ref.size_bytes}`);
  }
  if ((await sha256Hex(bytes)) !== ref.sha256) throw new PayloadRefMismatchError(`payload reference ${ref.artifact_id}: sha256 mismatch`);
  return JSON.parse(new TextDecoder().decode(bytes)) as unknown;
}

const isRef = (value: unknown): value is PayloadRef =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as PayloadRef).url === 'string' &&
  typeof (value as PayloadRef).sha256 === 'string';

/**
 * The message with what travelled by reference fetched in: `payload` from `payload_ref`, and a
 * plan step's `payload.input` from `payload.input_ref`. A message with no reference is returned
 * as it is (no request). The agent worker hands its handlers hydrated messages; call it on
 * messages you receive yourself (`client.messaging.receive`).
 */
export async function hydrate<T extends Message>(message: T, signal?: AbortSignal): Promise<T> {
  let hydrated = message;
  if (isRef(message.payload_ref) && message.payload === null) {
    hydrated = { ...hydrated, payload: await fetchPayloadRef(message.payload_ref, signal) };
  }
  const payload = hydrated.payload as { input?: unknown; input_ref?: unknown } | null;
  if (payload !== null && typeof payload === 'object' && isRef(payload.input_ref) && payload.input === null) {
    hydrated = { ...hydrated, payload: { ...payload, input: await fetchPayloadRef(payload.input_ref, signal) } };
  }
  return hydrated;
}

/** The UTF-8 JSON text of a payload when it is larger than `limit` bytes (to send by reference), else null. */
export function oversizedJson(payload: unknown, limit: number): Uint8Array | null {
  const text = JSON.stringify(payload ?? {});
  // Bytes are at most 3× the UTF-16 length: most payloads are decided without encoding them.
  if (text.length * 3 <= limit) return null;
  const bytes = new TextEncoder().encode(text);
  return bytes.length > limit ? bytes : null;
}

/** The messaging client whose sends upload payloads over `limit` bytes as artifacts and send `payload_ref`. */
export function offloading(messaging: DomainClient<'messaging'>, artifacts: Uploader, limit: number): DomainClient<'messaging'> {
  const offload = async <P extends { payload?: unknown; payload_ref?: { artifact_id: string } }>(message: P, signal?: AbortSignal) => {
    const bytes = message.payload_ref === undefined ? oversizedJson(message.payload, limit) : null;
    if (bytes === null) return message;
    const artifact = await artifacts.uploadStream({
      name: 'payload.json',
      content_type: 'application/json',
      size_bytes: bytes.length,
      sha256: await sha256Hex(bytes),
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
