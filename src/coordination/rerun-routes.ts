import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { created, ok } from '../http/reply.js';
import { DataEnvelope } from '../http/schemas.js';
import { callerOf } from './caller.js';
import { MAX_REPLAY, type RunRerun } from './rerun.js';
import { RerunBody, ReplayBody, Replayed, Run, RunParams } from './schemas.js';

const tags = ['coordination'];

/** Recovering runs: a finished run rerun from one of its steps, and finished runs replayed in bulk. */
export function rerunRoutes(reruns: RunRerun, maxReplay = MAX_REPLAY): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/coordination/runs/:run_id/rerun',
      {
        config: { permission: 'runs:write', conflict: 'The run has not finished, or is a sub_plan run (rerun its parent)' },
        schema: {
          tags,
          summary: "Rerun a finished run from a step, with edited input: a new run (rerun_of) keeps the earlier steps' outputs",
          params: RunParams,
          body: RerunBody,
          response: { 201: DataEnvelope(Run) },
        },
      },
      async (request, reply) => created(reply, await reruns.rerun(request.params.run_id, request.body, callerOf(request.principal))),
    );

    app.post(
      '/coordination/runs/replay',
      {
        config: { permission: 'runs:write' },
        schema: {
          tags,
          summary: `Replay the finished runs a filter matches (oldest first, at most ${maxReplay} a call, truncated when more matched; an agent's own runs only)`,
          body: ReplayBody,
          response: { 200: DataEnvelope(Replayed) },
        },
      },
      async (request, reply) => ok(reply, await reruns.replay(request.body, callerOf(request.principal))),
    );
  };
}
