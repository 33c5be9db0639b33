import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { StringDecoder } from 'node:string_decoder';
import { jsonParser, type Token } from 'stream-json/core/parser.js';
import { AppError, InvalidRequest, PayloadTooLarge } from '../kernel/errors.js';
import { StagedPayload, type StagedJson } from '../kernel/ports.js';
import { MAX_JSON_DEPTH, tooDeepError } from './input-guards.js';

/** Where a large value may be: a top-level field, or that field of each item of a top-level list. */
export type OffloadPath = readonly [field: string] | readonly [list: string, field: string];

/** Where one streamed value was: a top-level field, or a field of one item of a list. */
export type StagedPath = readonly [field: string] | readonly [list: string, index: number, field: string];

export interface OffloadedBody {
  /** The body's compact JSON text with `null` where each staged value was. */
  rest: Buffer;
  staged: { path: StagedPath; json: StagedJson }[];
  /** Of the raw body, as received (request signatures cover it). */
  sha256: string;
  bytes: number;
}

export interface OffloadOptions {
  paths: readonly OffloadPath[];
  /** A value whose compact JSON text is longer is staged; shorter ones stay in `rest`. */
  inlineBytes: number;
  /** The raw body's limit. */
  maxBytes: number;
  stage: (source: Readable) => Promise<StagedJson>;
}

interface Frame {
  array: boolean;
  count: number;
  key: string | null;
  /** Its position in the list that holds it (-1 elsewhere). */
  index: number;
  /** The keys seen so far, kept where a staged value may be (a repeated key would misplace it). */
  seen: Set<string> | null;
}

/** One value being copied out of the body as compact JSON text: in memory until it passes the inline limit. */
interface Capture {
  path: StagedPath;
  depth: number;
  parts: string[];
  chars: number;
  /** Exact UTF-8 length once it may be over the limit (-1 before). */
  bytes: number;
  sink: PassThrough | null;
  staged: Promise<StagedJson> | null;
}

const HIGH_SURROGATE_FIRST = 0xd800;
const HIGH_SURROGATE_LAST = 0xdbff;
/** JSON.stringify's escaping of a piece of a string, without the quotes. */
const escaped = (text: string) => JSON.stringify(text).slice(1, -1);

/**
 * Reads a JSON body with a streaming tokenizer, copying each value at `paths` out as the
 * compact JSON text JSON.stringify would write for it (the text an in-memory offload stores):
 * a value within the inline limit stays in the rest of the body, a larger one is streamed to
 * storage as it arrives, so memory holds a few chunks of it, never the whole. On any failure
 * (malformed JSON, a body over the limit, a storage error) the staged values are discarded.
 */
export async function offloadJsonBody(source: AsyncIterable<Buffer>, options: OffloadOptions): Promise<OffloadedBody> {
  const tokenize = jsonParser({
    packKeys: true,
    streamKeys: false,
    packStrings: false,
    streamStrings: true,
    packNumbers: true,
    streamNumbers: false,
  });
  const hash = createHash('sha256');
  const decoder = new StringDecoder('utf8');
  const stack: Frame[] = [];
  const rest: string[] = [];
  const done: { path: StagedPath; staged: Promise<StagedJson> }[] = [];
  let capture: Capture | null = null;
  let high = '';
  let finished = false;
  let bytes = 0;

  const openSink = (c: Capture) => {
    c.sink = new PassThrough();
    c.staged = options.stage(c.sink);
    // Observed at once: a failure (over the upload limit, no space) is awaited below.
    c.staged.catch(() => undefined);
  };
  const emit = (text: string) => {
    const c = capture;
    if (c === null) return void rest.push(text);
    c.parts.push(text);
    c.chars += text.length;
    if (c.sink !== null) return;
    if (c.bytes >= 0) c.bytes += Buffer.byteLength(text);
    // At most 3 bytes per UTF-16 unit: most values are decided without encoding them.
    else if (c.chars * 3 > options.inlineBytes) {
      const joined = c.parts.join('');
      c.parts = [joined];
      c.bytes = Buffer.byteLength(joined);
    }
    if (c.bytes > options.inlineBytes) openSink(c);
  };
  const pathAt = (): StagedPath | null => {
    const top = stack[0];
    if (top === undefined || top.array || top.key === null) return null;
    if (stack.length === 1) return options.paths.some((p) => p.length === 1 && p[0] === top.key) ? [top.key] : null;
    const [, list, item] = stack;
    if (stack.length !== 3 || !list!.array || item!.array || item!.key === null) return null;
    const field = item!.key;
    return options.paths.some((p) => p.length === 2 && p[0] === top.key && p[1] === field) ? [top.key, item!.index, field] : null;
  };
  /** Before any value: its comma in a list, and whether it is one to copy out. Returns its index in a list. */
  const valueStart = (): number => {
    const top = stack.at(-1);
    const index = top?.array ? top.count++ : -1;
    if (index > 0) emit(',');
    if (capture === null) {
      const path = pathAt();
      if (path !== null) capture = { path, depth: stack.length, parts: [], chars: 0, bytes: -1, sink: null, staged: null };
    }
    return index;
  };
  const valueEnd = () => {
    const c = capture;
    if (c !== null && stack.length === c.depth) {
      capture = null;
      if (c.sink === null) rest.push(c.parts.join(''));
      else {
        c.sink.end(Buffer.from(c.parts.join('')));
        c.parts = [];
        done.push({ path: c.path, staged: c.staged! });
        rest.push('null');
      }
    }
    if (stack.length === 0) finished = true;
  };
  const open = (array: boolean) => {
    const index = valueStart();
    emit(array ? '[' : '{');
    const tracked =
      !array &&
      (stack.length === 0 ||
        (stack.length === 2 && stack[1]!.array && options.paths.some((p) => p.length === 2 && p[0] === stack[0]!.key)));
    stack.push({ array, count: 0, key: null, index, seen: tracked ? new Set() : null });
    if (stack.length > MAX_JSON_DEPTH) throw tooDeepError();
  };
  const close = (array: boolean) => {
    stack.pop();
    emit(array ? ']' : '}');
    valueEnd();
  };
  const onToken = (token: Token) => {
    switch (token.name) {
      case 'startObject':
      case 'startArray':
        return open(token.name === 'startArray');
      case 'endObject':
      case 'endArray':
        return close(token.name === 'endArray');
      case 'keyValue': {
        const top = stack.at(-1)!;
        if (top.seen?.has(token.value)) throw InvalidRequest.field(token.value, 'appears twice in one object');
        top.seen?.add(token.value);
        if (top.count++ > 0) emit(',');
        top.key = token.value;
        return emit(`${JSON.stringify(token.value)}:`);
      }
      case 'startString':
        valueStart();
        return emit('"');
      case 'stringChunk': {
        // A surrogate pair split between chunks is escaped whole, as JSON.stringify would.
        let text = high + token.value;
        high = '';
        const last = text.charCodeAt(text.length - 1);
        if (last >= HIGH_SURROGATE_FIRST && last <= HIGH_SURROGATE_LAST) {
          high = text.slice(-1);
          text = text.slice(0, -1);
        }
        if (text.length > 0) emit(escaped(text));
        return;
      }
      case 'endString':
        if (high !== '') emit(escaped(high));
        high = '';
        emit('"');
        return valueEnd();
      case 'numberValue':
        valueStart();
        // A copied number is written as JSON.parse then JSON.stringify would (`1.0` is `1`).
        emit(capture === null ? token.value : JSON.stringify(Number(token.value)));
        return valueEnd();
      case 'nullValue':
      case 'trueValue':
      case 'falseValue':
        valueStart();
        emit(String(token.value));
        return valueEnd();
      default:
        return;
    }
  };
  const feed = (text: string) => {
    if (text.length === 0) return;
    const out = tokenize(text);
    if (typeof out !== 'symbol') for (const token of out.values) onToken(token);
  };
  /** What a copied value produced from this chunk goes to storage before the next is read (backpressure). */
  const drain = async () => {
    const c = capture;
    if (c === null || c.sink === null || c.parts.length === 0) return;
    const ready = c.sink.write(Buffer.from(c.parts.join('')));
    c.parts = [];
    if (!ready) await Promise.race([once(c.sink, 'drain'), c.staged]);
  };

  try {
    try {
      for await (const chunk of source) {
        bytes += chunk.length;
        if (bytes > options.maxBytes) throw new PayloadTooLarge(`Request body is larger than ${options.maxBytes} bytes`);
        hash.update(chunk);
        feed(decoder.write(chunk));
        await drain();
      }
      feed(decoder.end());
    } catch (err) {
      if (err instanceof AppError) throw err;
      if (err instanceof Error && /^Parser /.test(err.message)) throw notJson(err.message);
      throw err;
    }
    if (!finished) throw notJson('the body ends before its JSON value does');
    const staged = await Promise.all(done.map(async ({ path, staged }) => ({ path, json: await staged })));
    return { rest: Buffer.from(rest.join('')), staged, sha256: hash.digest('hex'), bytes };
  } catch (err) {
    await discardAll(capture, done);
    throw err;
  }
}

function notJson(reason: string): InvalidRequest {
  const message = `is not valid JSON: ${reason}`;
  return new InvalidRequest(`Invalid request: body ${message}`, [{ field: 'body', in: 'body', message }]);
}

/** Nothing of a refused body is kept: the value being copied is cut off, and every staged one dropped. */
async function discardAll(capture: Capture | null, done: { staged: Promise<StagedJson> }[]): Promise<void> {
  const pending = done.map((d) => d.staged);
  if (capture?.sink) {
    capture.sink.destroy(new Error('the request body was refused'));
    pending.push(capture.staged!);
  }
  const results = await Promise.allSettled(pending);
  await Promise.allSettled(results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.discard()] : [])));
}

/** The rest of a streamed body, for Fastify's JSON parser: its length checks count the raw body. */
export function restOf(body: OffloadedBody): Readable {
  const stream = Readable.from([body.rest], { objectMode: false }) as Readable & { receivedEncodedLength: number };
  stream.receivedEncodedLength = body.bytes;
  return stream;
}

/**
 * Route hooks that stream a JSON body over the inline limit (`offloadJsonBody`): Fastify then
 * parses only the rest, and each staged value is put back in the parsed body as a
 * StagedPayload, before validation. Smaller bodies, and any while `stage` is null (no
 * storage bound), take the usual path untouched. Whatever the route did not keep is
 * discarded once it has answered.
 */
export function streamedJsonBody(options: {
  paths: readonly OffloadPath[];
  inlineBytes: number;
  stage: () => ((source: Readable) => Promise<StagedJson>) | null;
}) {
  const stagedOf = new WeakMap<FastifyRequest, OffloadedBody['staged']>();
  return {
    async preParsing(request: FastifyRequest, _reply: FastifyReply, payload: Readable): Promise<Readable> {
      const stage = options.stage();
      const declared = Number(request.headers['content-length']);
      const limit = request.routeOptions.bodyLimit ?? 0;
      const json = /^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '');
      // Over the limit: Fastify answers 413 without reading; encoded bodies are decoded by it.
      if (stage === null || !json || declared <= options.inlineBytes || declared > limit || request.headers['content-encoding'])
        return payload;
      const body = await offloadJsonBody(payload, { paths: options.paths, inlineBytes: options.inlineBytes, maxBytes: limit, stage });
      stagedOf.set(request, body.staged);
      request.bodySha256 = body.sha256;
      return restOf(body);
    },
    preValidation(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
      for (const { path, json } of stagedOf.get(request) ?? []) {
        const holder = (path.length === 1 ? request.body : (request.body as Record<string, unknown[]>)[path[0]]?.[path[1]]) as
          Record<string, unknown> | undefined;
        if (holder !== undefined) holder[path.at(-1) as string] = new StagedPayload(json);
      }
      done();
    },
    onResponse(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
      // A no-op for what the route kept (committed bytes stay).
      for (const { json } of stagedOf.get(request) ?? [])
        json.discard().catch((err: unknown) => request.log.error({ err }, 'could not discard a staged payload'));
      done();
    },
  };
}
