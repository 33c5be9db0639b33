import type { Switchboard } from './client.js';
import type { Body, Message, Result } from './types.js';

/** The event name of a plan step's message. */
const PLAN_STEP_EVENT = 'plan.step.execute';

/** A step's latest checkpoint: what its agent saved, when, and in which attempt. */
export type Checkpoint = Result<'coordination.saveCheckpoint'>;

/** A message as a handler gets it: a plan step's carries the step's latest checkpoint, if one was saved. */
export type HandledMessage = Message & { checkpoint?: Checkpoint };

/** What a handler may do while it works on a plan step's message (either call throws for another message). */
export interface HandlerContext {
  /** Saves the step's progress (JSON, at most 1 MiB): a redelivery or the next attempt of the step carries the latest. */
  checkpoint(state: unknown): Promise<Checkpoint>;
  /** Appends a line to the step's log (at most 4,000 characters; 1,000 lines a step), kept with the run. */
  log(message: string, level?: Body<'coordination.appendStepLog'>['level']): Promise<void>;
}

/** The step a message is for, when it is a plan step's. */
function stepOf(message: Message): { run_id: string; step_id: string } | undefined {
  const payload = message.payload as { run_id?: unknown; step_id?: unknown } | null;
  if (message.event_name !== PLAN_STEP_EVENT || typeof payload?.run_id !== 'string' || typeof payload.step_id !== 'string')
    return undefined;
  return { run_id: payload.run_id, step_id: payload.step_id };
}

/** The message a handler gets, and its context (which refuses step calls for a message of no plan step). */
export function handling(client: Switchboard, message: Message): { message: HandledMessage; ctx: HandlerContext } {
  const step = stepOf(message);
  const path = () => {
    if (!step) throw new Error(`message ${message.message_id} (${message.event_name}) is no plan step's`);
    return step;
  };
  const checkpoint = (message.payload as { checkpoint?: Checkpoint } | null)?.checkpoint;
  return {
    message: step && checkpoint ? { ...message, checkpoint } : message,
    ctx: {
      checkpoint: (state) => client.coordination.saveCheckpoint({ path: path(), body: { state } }),
      log: async (message, level) => {
        await client.coordination.appendStepLog({ path: path(), body: level ? { message, level } : { message } });
      },
    },
  };
}
