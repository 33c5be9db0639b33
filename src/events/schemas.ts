import { Type, type Static } from '@sinclair/typebox';
import { CursorPageQuery, JsonObject, Timestamp } from '../http/schemas.js';

/**
 * The events domain's schemas, written once: they validate requests, type the
 * service and the SDK, and document the OpenAPI.
 */

/** `evt_` and the event's log position in 13 base-32 digits (below 2^62, so any id given fits a bigint): sorts as text in log order. */
export const EVENT_ID_PATTERN = '^evt_[0-3][0-9a-v]{12}$';
export const EventId = Type.String({ pattern: EVENT_ID_PATTERN, description: 'Event id (evt_…), increasing in commit order' });

const TypePatterns = Type.String({
  minLength: 1,
  maxLength: 1000,
  description: "Comma-separated event types or patterns: 'run.*' matches one more segment, 'run.>' any depth (e.g. 'run.>,task.created')",
});
const Subject = Type.String({ minLength: 1, maxLength: 200, description: 'Only events about this object (run_…, tsk_…, an agent id …)' });
const After = Type.Intersect([EventId], { description: 'Only events after this one (exclusive)' });

export const Event = Type.Object(
  {
    id: Type.String({ description: 'Event id (evt_…); ids increase in commit order' }),
    type: Type.String({ description: "Dotted type, e.g. 'run.completed'" }),
    subject: Type.String({ description: 'The id of the thing the event is about' }),
    actor: Type.String({ description: "The principal whose request caused it, or 'system'" }),
    data: JsonObject,
    reason: Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'The reason the request gave, if any' }),
    created_at: Timestamp,
  },
  { title: 'Event' },
);
export type Event = Static<typeof Event>;

export const ListEventsQuery = Type.Composite([
  Type.Object({ type: Type.Optional(TypePatterns), subject: Type.Optional(Subject), after: Type.Optional(After) }),
  CursorPageQuery,
]);
export type ListEventsQuery = Static<typeof ListEventsQuery>;

export const StreamEventsQuery = Type.Object({
  type: Type.Optional(TypePatterns),
  subject: Type.Optional(Subject),
  after: Type.Optional(After),
});
export type StreamEventsQuery = Static<typeof StreamEventsQuery>;
