/** The Switchboard SDK (`switchboard/client`): the API client and the agent worker. */
export { Switchboard, SwitchboardError, type SwitchboardOptions, type CallInput, type DomainClient } from './client.js';
export { createAgent, PermanentError, type Agent, type AgentOptions, type Handler } from './agent.js';
export { OPERATIONS } from './operations.js';
export type { Message } from './types.js';
