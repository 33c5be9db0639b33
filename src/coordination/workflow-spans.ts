import { contextOf, inSpan, traceparentOfSpan } from '../kernel/tracing.js';
import type { RunRow } from './run-list-store.js';
import type { StartRun } from './run-state.js';

/**
 * A run's start in an `invoke_workflow {plan}` span (OTel GenAI conventions), a child of the
 * active span (the request, the trigger's fire); its context is stored with the run.
 */
export function inWorkflowSpan<T>(spec: StartRun, fn: (traceparent: string | null) => Promise<T>): Promise<T> {
  const name = spec.planAlias ?? spec.planId;
  return inSpan(
    `invoke_workflow ${name}`,
    {
      attributes: () => ({
        'gen_ai.operation.name': 'invoke_workflow',
        'gen_ai.agent.name': name,
        'switchboard.plan.id': spec.planId,
        'switchboard.plan.version': spec.planVersion,
      }),
    },
    (span) => fn(traceparentOfSpan(span)),
  );
}

/** A due timer's advance of a run, in the run's trace: a step retried after its backoff, or timed out, stays in it. */
export function inResumeSpan<T>(run: RunRow, fn: () => Promise<T>): Promise<T> {
  return inSpan(
    `resume_workflow ${run.plan_id}`,
    {
      parent: contextOf(run.traceparent),
      attributes: () => ({ 'gen_ai.operation.name': 'invoke_workflow', 'switchboard.run.id': run.id }),
    },
    fn,
  );
}
