import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { created, list, ok } from '../http/reply.js';
import { DataEnvelope, ListEnvelope, page } from '../http/schemas.js';
import { callerOf } from './caller.js';
import { MAX_CHECKPOINT_BYTES, type CheckpointService } from './checkpoints.js';
import type { StepLogService } from './step-logs.js';
import { Checkpoint, CheckpointBody, RunLogsQuery, RunParams, RunStepParams, StepLogBody, StepLogLine } from './schemas.js';

const tags = ['coordination'];
/** Room for the envelope around the largest state. */
const CHECKPOINT_BODY_BYTES = MAX_CHECKPOINT_BYTES + 1024;

/** What the agent executing a step writes to it while it works (checkpoints, log lines), and reading its log. */
export function stepWorkRoutes({ checkpoints, logs }: { checkpoints: CheckpointService; logs: StepLogService }): FastifyPluginAsyncTypebox {
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

    app.post(
      '/coordination/runs/:run_id/steps/:step_id/logs',
      {
        config: { permission: 'messaging:write', conflict: 'The step is not running, or its log is full (1,000 lines)' },
        schema: {
          tags,
          summary: 'Append a line to the log of a step this agent is executing (kept with the run; a run.step.log event)',
          params: RunStepParams,
          body: StepLogBody,
          response: { 201: DataEnvelope(StepLogLine) },
        },
      },
      async (request, reply) => {
        const { run_id, step_id } = request.params;
        const { message, level } = request.body;
        return created(reply, await logs.append(callerOf(request.principal), run_id, step_id, message, level));
      },
    );

    app.get(
      '/coordination/runs/:run_id/logs',
      {
        config: { permission: 'runs:read' },
        schema: {
          tags,
          summary: "The log lines its agents wrote to a run's steps, oldest first",
          params: RunParams,
          querystring: RunLogsQuery,
          response: { 200: ListEnvelope(StepLogLine) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await logs.list(request.params.run_id, request.query.step_id, window), window);
      },
    );
  };
}
