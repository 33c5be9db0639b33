import type { OPERATIONS, Domain, HttpMethod, OperationKey, PAGED } from './operations.js';
import type { Shapes as Schemas } from './shapes.js';

/*
 * Every operation's request and result types, from the shapes generated out of the server's own
 * TypeBox schemas (shapes.ts), so a wrong field fails to compile, and the schemas themselves are
 * checked against the OpenAPI document.
 */

type Spec<K extends OperationKey> = K extends `${infer D extends Domain}.${infer N}`
  ? N extends keyof (typeof OPERATIONS)[D]
    ? (typeof OPERATIONS)[D][N]
    : never
  : never;
type PathParams<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? Name | PathParams<Rest> : never;

/** The JSON request body of an operation (`never` when it takes none). */
export type Body<K extends OperationKey> = Schemas[K] extends { body: infer B } ? B : never;
/** The query parameters of an operation (`never` when it has none). */
export type Query<K extends OperationKey> = Schemas[K] extends { query: infer Q } ? Q : never;
/** What a call resolves to: the envelope's `data`, or the `Response` of a download (to stream). */
export type Result<K extends OperationKey> = Schemas[K] extends { data: infer D } ? D : Response;
/** One element of a paginated list (of its data, or of the list under the key its spec names). */
export type Item<K extends OperationKey> =
  Spec<K> extends readonly [HttpMethod, string, typeof PAGED, infer Key extends keyof Result<K>]
    ? Result<K>[Key] extends ReadonlyArray<infer I>
      ? I
      : never
    : Result<K> extends ReadonlyArray<infer I>
      ? I
      : never;
/** Operations that page with limit/offset and so have `.all()`. */
export type IsPaged<K extends OperationKey> = Spec<K> extends readonly [HttpMethod, string, typeof PAGED, ...string[]] ? true : false;

/** One page of a paginated list, with the server's `meta`. */
export interface Page<T> {
  items: T[];
  /** Items in the whole list (an estimate when `totalEstimated`). */
  total: number;
  limit: number;
  offset: number;
  /** The list is longer than the server counts exactly: `total` is an estimate. */
  totalEstimated?: true;
  /** Lists that page by cursor: pass it as `query.cursor` for the next page; absent on the last. */
  nextCursor?: string;
}

/** Bytes sent as they are: the raw PUT of an upload URL, or a hook's body. */
export type RawBody = Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Uint8Array | string;

type PathInput<K extends OperationKey> = [PathParams<Spec<K>[1]>] extends [never]
  ? { path?: undefined }
  : { path: Record<PathParams<Spec<K>[1]>, string | number> };

type QueryInput<K extends OperationKey> = Schemas[K] extends { query: infer Q }
  ? object extends Q
    ? { query?: Q }
    : { query: Q }
  : // Hooks take any query (it becomes event.query); other operations take none.
    K extends `coordination.hook${string}`
    ? { query?: Record<string, string | number | boolean | undefined> }
    : { query?: undefined };

type BodyInput<K extends OperationKey> = Schemas[K] extends { body: infer B }
  ? Schemas[K] extends { optionalBody: true }
    ? { body?: B }
    : { body: B }
  : Schemas[K] extends { content: 'multipart' }
    ? { /** A form with the part `file` and optional `name`, `content_type`, `metadata`. */ body: FormData }
    : Schemas[K] extends { content: 'raw' }
      ? { body: RawBody }
      : Schemas[K] extends { content: 'any' }
        ? { /** JSON, or raw bytes sent as they are. */ body?: unknown }
        : { body?: undefined };

/** The single argument of an operation's method. */
export type CallInput<K extends OperationKey> = PathInput<K> &
  QueryInput<K> &
  BodyInput<K> & {
    /** Extra request headers (If-Match, Range…). */
    headers?: Record<string, string>;
    signal?: AbortSignal;
  };

type Args<K extends OperationKey> = object extends CallInput<K> ? [input?: CallInput<K>] : [input: CallInput<K>];

/**
 * A typed method; paginated lists also have `.all()`, an async iterator over every page, and
 * `.page()`, one page with the server's total.
 */
export type Operation<K extends OperationKey> = ((...input: Args<K>) => Promise<Result<K>>) &
  (IsPaged<K> extends true ? { all(...input: Args<K>): AsyncIterable<Item<K>>; page(...input: Args<K>): Promise<Page<Item<K>>> } : unknown);

export type DomainClient<D extends Domain> = { [N in keyof (typeof OPERATIONS)[D] & string]: Operation<`${D}.${N}` & OperationKey> };

export type { Event, Message, UsageReport } from './shapes.js';
