/** The Switchboard SDK (`switchboard/client`): the API client and the agent worker. */
export {
  Switchboard,
  SwitchboardError,
  retryAfterMs,
  type ArtifactStreams,
  type EventStreams,
  type RetryEvent,
  type StreamEventsInput,
  type SwitchboardOptions,
} from './client.js';
export { verifyWebhook, WebhookVerificationError, type WebhookHeaders } from './webhooks.js';
export { createAgent, PermanentError, type Agent, type AgentOptions, type Handler } from './agent.js';
export { OPERATIONS, PAGED, PUBLIC, type Domain, type HttpMethod, type OperationKey } from './operations.js';
export type { Body, CallInput, DomainClient, Event, Item, Message, Operation, Query, RawBody, Result } from './types.js';
