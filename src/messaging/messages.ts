import { iso } from '../kernel/clock.js';
import type { Principal } from '../auth/index.js';
import { Forbidden } from '../kernel/errors.js';
import type { PayloadRef, SignedPayloadRef } from '../kernel/ports.js';
import type { MessageRow } from './store.js';

/** The caller of a request, as messaging sees it: who it is and whether it may reach any inbox (`messaging:admin`). */
export interface Caller {
  actor: string;
  agentId: string | null;
  admin: boolean;
}

export const callerOf = (p: Principal): Caller => ({ actor: p.actor, agentId: p.agentId, admin: p.permissions.has('messaging:admin') });

/** A message as callers see it (an inbox, a dead letter, a thread). */
export interface Message {
  message_id: string;
  source: string;
  destination: string;
  event_name: string;
  /** Null when the payload travels by reference (`payload_ref`). */
  payload: unknown;
  /** A payload over the inline limit: its artifact (PayloadRefs signs it before anyone reads it). */
  payload_ref?: PayloadRef | SignedPayloadRef;
  [STEP_INPUT_REF]?: PayloadRef;
  thread_id: string | null;
  timestamp: string;
  retry_count: number;
  delivery_semantic: 'at_least_once' | 'at_most_once';
  status: string;
  redriven_from: string | null;
  /** W3C trace context of the send: a receiver's work continues that trace. */
  traceparent: string | null;
  priority: number;
  ordering_key: string | null;
  fairness_key: string | null;
}

/**
 * The stored reference of a step message's `payload.input_ref` (a large step input), set only
 * on the platform's step messages, so no sender gets a URL signed for a reference it wrote.
 * A symbol: neither the serializer nor JSON.stringify sends it.
 */
export const STEP_INPUT_REF = Symbol('step input ref');

function stepInputRef(row: MessageRow, payload: unknown): PayloadRef | undefined {
  if (row.origin_kind !== 'plan_step' || payload === null || typeof payload !== 'object') return undefined;
  const ref = (payload as { input_ref?: PayloadRef }).input_ref;
  return ref !== undefined && typeof ref === 'object' && 'version' in ref ? ref : undefined;
}

export function toMessage(row: MessageRow): Message {
  const payload = JSON.parse(row.payload) as unknown;
  const inputRef = stepInputRef(row, payload);
  return {
    ...(inputRef === undefined ? {} : { [STEP_INPUT_REF]: inputRef }),
    message_id: row.id,
    source: row.source,
    destination: row.destination,
    event_name: row.event_name,
    payload,
    ...(row.payload_ref === null ? {} : { payload_ref: JSON.parse(row.payload_ref) as PayloadRef }),
    thread_id: row.thread_id,
    timestamp: iso(row.created_at),
    retry_count: row.retry_count,
    delivery_semantic: row.delivery_semantic,
    status: row.state === 'pending' ? (row.deliveries > 0 ? 'delivered' : 'sent') : row.state,
    redriven_from: row.redriven_from,
    traceparent: row.traceparent,
    priority: row.priority,
    ordering_key: row.ordering_key,
    fairness_key: row.fairness_key,
  };
}

/** An agent acts on its own inbox and subscriptions only; an admin on anyone's. */
export function checkReceiver(caller: Caller, agentId: string): void {
  if (!caller.admin && caller.agentId !== agentId) throw new Forbidden(`Agent '${caller.agentId}' cannot receive for agent '${agentId}'`);
}
