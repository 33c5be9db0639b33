/**
 * The Switchboard SDK for browsers (the console; `switchboard/client` under the `browser`
 * condition): the same client without Node's crypto, so with an API key or a RequestSigner of
 * one's own, and no agent worker.
 */
export {
  Switchboard,
  SwitchboardError,
  retryAfterMs,
  type ArtifactStreams,
  type ClientOptions,
  type CookieSession,
  type RequestSigner,
  type RetryEvent,
} from './client.js';
export { OPERATIONS, PAGED, PUBLIC, type Domain, type HttpMethod, type OperationKey } from './operations.js';
export type { Body, CallInput, DomainClient, Item, Page, Operation, Query, RawBody, Result } from './types.js';
/** Whether a NATS-style pattern (`run.*`, `run.>`) matches a topic or event type, as the server's filters do. */
export { topicMatches } from './topics.js';
