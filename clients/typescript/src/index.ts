/** The Switchboard SDK (`switchboard/client`) for Node: the API client, with Ed25519 signing, and the agent worker. */
export { Switchboard, ed25519Signer, type SwitchboardOptions } from './signing.js';
export {
  SwitchboardError,
  retryAfterMs,
  type ArtifactStreams,
  type ClientOptions,
  type EventStreams,
  type RequestSigner,
  type RetryEvent,
  type StreamEventsInput,
} from './client.js';
export { verifyWebhook, WebhookVerificationError, type WebhookHeaders } from './webhooks.js';
export { Channel, ChannelClosedError, type ChannelOptions, type ChannelSocket } from './channel.js';
export {
  createAgent,
  PermanentError,
  withUsage,
  WithUsage,
  type Agent,
  type AgentLogger,
  type AgentOptions,
  type ApprovalDecision,
  type ApprovalHandler,
  type ApprovalRequest,
  type Handler,
} from './agent.js';
export type { Checkpoint, HandledMessage, HandlerContext } from './step-context.js';
export { genAiUsageProcessor, type GenAiUsageProcessor } from './gen-ai-usage.js';
export { DEFAULT_INLINE_PAYLOAD_BYTES, PayloadRefMismatchError, type PayloadRef } from './payload-refs.js';
export { fetchPayloadRef, hydrate } from './hydrate.js';
export { topicMatches } from './topics.js';
export { OPERATIONS, PAGED, PUBLIC, type Domain, type HttpMethod, type OperationKey } from './operations.js';
export type { Body, CallInput, DomainClient, Event, Item, Page, Message, Operation, Query, RawBody, Result, UsageReport } from './types.js';
