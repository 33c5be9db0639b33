import { MAX_CREDIT } from '#client/limits.js';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { AgentId, JsonObject } from '../http/schemas.js';
import { UsageReport } from '../usage/index.js';
import { ExtendBody, ReceiveQuery, RejectBody, SendBatchBody, SendBody, SubscribeBody } from './schemas.js';

/**
 * The agent channel's frames (GET /messaging/channel, a WebSocket): JSON text, one object per
 * frame. Requests carry a small numeric `id` the answer repeats; `credit` opens the delivery
 * window and is not answered. Each request's body is the body of the HTTP route it stands for.
 */

export { MAX_CREDIT } from '#client/limits.js';
/** Most acks, rejects or extends in one frame (as many as one HTTP acknowledge takes). */
export const MAX_SETTLE_BATCH = 500;

export const ChannelQuery = Type.Pick(ReceiveQuery, ['agent_id', 'visibility_timeout']);

const FrameId = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Chosen by the client; repeated in the answer' });
const MessageId = Type.String({ minLength: 1, maxLength: 100 });
const batch = <T extends TSchema>(item: T) => Type.Array(item, { minItems: 1, maxItems: MAX_SETTLE_BATCH });
const request = <K extends string, T extends TSchema>(kind: K, body: T) =>
  Type.Object({ id: FrameId, [kind]: body } as { id: typeof FrameId } & { [P in K]: T }, { additionalProperties: false });

/** A send over the channel: the HTTP send body; `source`, when given, must be the channel's agent. */
export const ChannelSendBody = Type.Composite([SendBody, Type.Object({ source: Type.Optional(AgentId) })], { additionalProperties: false });

export const AckItem = Type.Union([
  MessageId,
  Type.Object(
    {
      message_id: MessageId,
      output: Type.Optional(Type.Unknown({ description: 'Result of the work, kept for the producer' })),
      usage: Type.Optional(UsageReport),
    },
    { additionalProperties: false },
  ),
]);

export const ChannelHeartbeat = Type.Object(
  {
    load: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'Current load, 0 (idle) to 1 (saturated)' })),
    metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

/** Each frame a client sends, by the key that names its kind. */
export const CLIENT_FRAMES = {
  credit: Type.Object(
    { credit: Type.Integer({ minimum: 1, maximum: MAX_CREDIT, description: 'Messages more the server may push' }) },
    { additionalProperties: false },
  ),
  ack: request('ack', batch(AckItem)),
  reject: request('reject', batch(RejectBody)),
  extend: request('extend', batch(ExtendBody)),
  send: Type.Object(
    {
      id: FrameId,
      send: ChannelSendBody,
      traceparent: Type.Optional(Type.String({ maxLength: 200, description: 'W3C trace context of the send, as the HTTP header' })),
    },
    { additionalProperties: false },
  ),
  send_batch: request('send_batch', SendBatchBody),
  subscribe: request('subscribe', SubscribeBody),
  heartbeat: request('heartbeat', ChannelHeartbeat),
};

export type FrameKind = keyof typeof CLIENT_FRAMES;
export const FRAME_KINDS = Object.keys(CLIENT_FRAMES) as FrameKind[];
export const ClientFrame = Type.Union(Object.values(CLIENT_FRAMES));
export type ClientFrame = Static<typeof ClientFrame>;
/** A frame that asks for an answer (every kind but `credit`). */
export type ChannelRequest = Exclude<ClientFrame, { credit: number }>;

export const FrameError = Type.Object({
  code: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Unknown()),
});
export type FrameError = Static<typeof FrameError>;

/** What one item of an ack, reject or extend frame could not do (the rest of the frame went on). */
export const ItemFailure = Type.Object({ message_id: Type.String(), error: FrameError });
export type ItemFailure = Static<typeof ItemFailure>;
