/*
 * How the client sends a request's body: JSON, bytes, a stream or a multipart form, each with its
 * content type and, when the request is signed, the SHA-256 its signature covers. Web platform
 * APIs only, like client.ts: it runs in browsers too.
 */

/** The SHA-256 of no bytes: what a request without a body is signed as. */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** What hashes a body for a signature (the client's RequestSigner). */
export interface BodyHasher {
  /** The hex SHA-256 of a body; a Blob is read as a stream, not held in memory. */
  sha256Hex(body: string | Blob): Promise<string>;
}

/** A body ready to send, and the hash a signature covers (EMPTY_SHA256 when unsigned or empty). */
export interface EncodedBody {
  payload: Blob | FormData | ReadableStream<Uint8Array> | Uint8Array | string | undefined;
  bodySha256: string;
}

function isStream(body: unknown): body is ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> {
  return body instanceof ReadableStream || (typeof body === 'object' && body !== null && Symbol.asyncIterator in body);
}

function quote(value: string): string {
  return value.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}

/**
 * A form as one Blob with a fixed boundary. File parts stay the Blobs they are (a file opened
 * with `fs.openAsBlob` is read from disk when sent), so the body can be hashed for a signature
 * in one streaming pass and then sent, without being held in memory.
 */
function formBlob(form: FormData): { blob: Blob; contentType: string } {
  const random = Array.from(crypto.getRandomValues(new Uint8Array(12)), (byte) => byte.toString(16).padStart(2, '0')).join('');
  const boundary = `----switchboard-${random}`;
  const parts: Array<string | Blob> = [];
  for (const [name, value] of form) {
    if (typeof value === 'string') {
      parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`);
    } else {
      parts.push(
        `--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"; filename="${quote(value.name)}"\r\n` +
          `Content-Type: ${value.type || 'application/octet-stream'}\r\n\r\n`,
        value,
        '\r\n',
      );
    }
  }
  parts.push(`--${boundary}--\r\n`);
  return { blob: new Blob(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

function toWebStream(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  if (body instanceof ReadableStream) return body;
  // ReadableStream.from is not in every browser yet: pull from the iterator by hand.
  const iterator = body[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
}

/**
 * `body` as it is sent: JSON unless it is a FormData, Blob, stream, Uint8Array or string, which
 * are sent as they are. Sets the body's headers in `headers`: its content type (one the caller
 * set is kept for bytes and streams) and, when `hasher` signs, X-Content-SHA256 for what is not JSON.
 */
export async function encodeBody(body: unknown, headers: Record<string, string>, hasher: BodyHasher | undefined): Promise<EncodedBody> {
  let payload: EncodedBody['payload'];
  let bodySha256 = EMPTY_SHA256;
  if (body === undefined) {
    // No body: signed as the empty string's hash.
  } else if (body instanceof FormData) {
    if (hasher) {
      // Signed: one streaming pass for the hash, then sent. The signature covers the hash
      // declared in X-Content-SHA256, which the route checks against the bytes it reads.
      const { blob, contentType } = formBlob(body);
      headers['content-type'] = contentType;
      headers['x-content-sha256'] = bodySha256 = await hasher.sha256Hex(blob);
      payload = blob;
    } else {
      payload = body;
    }
  } else if (body instanceof Blob || body instanceof Uint8Array || typeof body === 'string') {
    // Bytes are sent as they are (no copy into a Blob); hashed for a signature as a Blob, which the
    // signer reads as a stream. Typed as a view of an ArrayBuffer: the DOM's Blob refuses SharedArrayBuffer views.
    payload = body;
    headers['content-type'] ??=
      typeof body === 'string' ? 'text/plain; charset=utf-8' : body instanceof Blob && body.type ? body.type : 'application/octet-stream';
    if (hasher) {
      headers['x-content-sha256'] = bodySha256 = await hasher.sha256Hex(
        body instanceof Uint8Array ? new Blob([body as Uint8Array<ArrayBuffer>]) : body,
      );
    }
  } else if (isStream(body)) {
    headers['content-type'] ??= 'application/octet-stream';
    if (hasher) {
      // A signature covers the hash of the bytes, known only once they are read: a signed
      // stream is gathered first (public upload URLs, see uploadStream, take streams as they come).
      const chunks: Uint8Array<ArrayBuffer>[] = [];
      for await (const chunk of toWebStream(body)) chunks.push(chunk as Uint8Array<ArrayBuffer>);
      payload = new Blob(chunks);
      headers['x-content-sha256'] = bodySha256 = await hasher.sha256Hex(payload);
    } else {
      payload = toWebStream(body);
    }
  } else {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
    if (hasher) bodySha256 = await hasher.sha256Hex(payload);
  }
  return { payload, bodySha256 };
}
