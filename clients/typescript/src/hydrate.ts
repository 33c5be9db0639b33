import { createHash } from 'node:crypto';
import { PayloadRefMismatchError, type PayloadRef } from './payload-refs.js';
import type { Message } from './types.js';

/*
 * Fetching what travelled by reference, in Node (the Node entry and the agent worker): the bytes
 * are hashed with node:crypto as they stream in, which WebCrypto (one digest of bytes held
 * whole) cannot do.
 */

/**
 * The value a reference stands for: its URL's JSON text, checked against the reference's size
 * and sha256, then parsed. The bytes go into one buffer of the expected size as they arrive,
 * hashed chunk by chunk (no second pass, no copy of the whole), and are refused as soon as they
 * run over it.
 */
export async function fetchPayloadRef(ref: PayloadRef, signal?: AbortSignal): Promise<unknown> {
  const refused = (what: string) => new PayloadRefMismatchError(`payload reference ${ref.artifact_id}: ${what}`);
  const response = await fetch(ref.url, signal ? { signal } : {});
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`payload reference ${ref.artifact_id}: GET answered ${response.status}`);
  }
  const bytes = new Uint8Array(ref.size_bytes);
  const hash = createHash('sha256');
  let length = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      const chunk = read.value;
      if (length + chunk.length > bytes.length) {
        await reader.cancel();
        throw refused(`more than the ${ref.size_bytes} bytes expected`);
      }
      bytes.set(chunk, length);
      hash.update(chunk);
      length += chunk.length;
    }
  }
  if (length !== ref.size_bytes) throw refused(`${length} bytes, expected ${ref.size_bytes}`);
  if (hash.digest('hex') !== ref.sha256) throw refused('sha256 mismatch');
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
