import type { Static } from '@sinclair/typebox';
import type * as Coordination from '../coordination/schemas.js';
import type * as Discovery from '../discovery/schemas.js';
import type * as Messaging from '../messaging/schemas.js';
import type * as Routines from '../routines/schemas.js';

/**
 * Request bodies and results typed from the server's own TypeBox schemas (type-only imports:
 * nothing of the server is loaded at run time), so a wrong field fails to compile.
 * Operations not listed here take and return plain JSON.
 */
export interface Bodies {
  'messaging.send': Static<typeof Messaging.SendBody>;
  'messaging.sendBatch': Static<typeof Messaging.SendBatchBody>;
  'messaging.acknowledge': Static<typeof Messaging.AcknowledgeBody>;
  'messaging.reject': Static<typeof Messaging.RejectBody>;
  'messaging.extend': Static<typeof Messaging.ExtendBody>;
  'messaging.publish': Static<typeof Messaging.PublishBody>;
  'messaging.subscribe': Static<typeof Messaging.SubscribeBody>;
  'discovery.registerCapability': Static<typeof Discovery.RegisterBody>;
  'discovery.heartbeat': Static<typeof Discovery.HeartbeatBody>;
  'discovery.search': Static<typeof Discovery.SearchBody>;
  'routines.create': Static<typeof Routines.CreateRoutineBody>;
  'routines.update': Static<typeof Routines.UpdateRoutineBody>;
  'coordination.createPlan': Static<typeof Coordination.PlanBody>;
  'coordination.startRun': Static<typeof Coordination.StartRunBody>;
  'coordination.approveStep': Static<typeof Coordination.ApproveBody>;
  'coordination.provideInput': Static<typeof Coordination.InputBody>;
  'coordination.createTrigger': Static<typeof Coordination.CreateTriggerBody>;
}

export interface Results {
  'messaging.receive': { messages: Message[] };
  'coordination.getRun': Static<typeof Coordination.Run>;
  'coordination.startRun': Static<typeof Coordination.Run>;
  'routines.create': Static<typeof Routines.Routine>;
}

export type Message = Static<typeof Messaging.Message>;
