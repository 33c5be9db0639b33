import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../http/reply.js';
import { DataEnvelope } from '../http/schemas.js';
import { callerOf } from './caller.js';
import { MAX_CHECKPOINT_BYTES, type CheckpointService } from './checkpoints.js';
import { Checkpoint, CheckpointBody, RunStepParams } from './schemas.js';

const tags = ['coordination'];
/** Room for the envelope around the largest state. */
const CHECKPOINT_BODY_BYTES = MAX_CHECKPOINT_BYTES + 1024;

/** What the agent executing a step writes to it while it works: checkpoints. */
export function stepWorkRoutes({ checkpoints }: { checkpoints: CheckpointService }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/coordination/runs/:run_id/steps/:step_id/checkpoint',
      {
        bodyLimit: CHECKPOINT_BODY_BYTES,
        config: { permission: 'messaging:write', conflict: 'The step is not running: it finished, or waits for its next attempt' },
        schema: {
          tags,
          summary:
            "Save the progress of a step this agent is executing (JSON, at most 1 MiB): the step's redelivered or retried message carries the latest",
          params: RunStepParams,
          body: CheckpointBody,
          response: { 200: DataEnvelope(Checkpoint) },
        },
      },
      async (request, reply) => {
        const { run_id, step_id } = request.params;
        return ok(reply, await checkpoints.save(callerOf(request.principal), run_id, step_id, request.body.state));
      },
    );
  };
}
