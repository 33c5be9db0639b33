/**
 * What a transition tells the event log (design §8): the run's timeline entries that matter to
 * someone outside, as log events with what a listener needs without a second call.
 */

import type { NewEvent } from '../kernel/ports.js';
import { parseNullableJson } from '../kernel/json.js';
import { stepOutput, type RunContext } from './run-state.js';
import type { NewRunEvent } from './store.js';

/** The log events of a transition's timeline entries, in order (subject: the run). */
export function logEventsOf(ctx: RunContext): NewEvent[] {
  const events: NewEvent[] = [];
  for (const entry of ctx.events) {
    const event = logEventOf(ctx, entry);
    if (event) events.push({ ...event, subject: ctx.run.id, actor: ctx.actor, reason: ctx.reason });
  }
  return events;
}

function logEventOf(ctx: RunContext, entry: NewRunEvent): Pick<NewEvent, 'type' | 'data'> | null {
  const { run } = ctx;
  const detail = JSON.parse(entry.detail) as Record<string, unknown>;
  const base = { run_id: run.id, plan_id: run.plan_id, plan_version: run.plan_version };
  const stepId = entry.step_id ?? null;
  const step = stepId === null ? undefined : ctx.steps.get(stepId);
  switch (entry.type) {
    case 'run.started':
      return { type: 'run.started', data: { ...base, status: 'running', parent_run_id: run.parent_run_id } };
    case 'run.waiting':
      return { type: 'run.waiting', data: { ...base, status: 'waiting' } };
    case 'run.redriven':
      return { type: 'run.redriven', data: { ...base, status: 'running', steps: detail.steps } };
    case 'run.completed':
      return { type: 'run.completed', data: { ...base, status: 'completed', output: parseNullableJson(run.output) } };
    case 'run.failed':
    case 'run.cancelled':
      return { type: entry.type, data: { ...base, status: entry.type.slice('run.'.length), error: run.error } };
    case 'step.completed':
      return { type: 'run.step.completed', data: { ...base, step_id: stepId, attempt: detail.attempt, output: step ? stepOutput(step) : null } };
    case 'step.failed':
      return { type: 'run.step.failed', data: { ...base, step_id: stepId, attempt: detail.attempt, error: detail.error } };
    case 'step.waiting': {
      // A human step waits; its input holds what the person is asked (step-starters.ts).
      const asked = (step ? parseNullableJson(step.row.input) : null) as Record<string, unknown> | null;
      // approve_url (a signed, single-use link to decide the step) joins this data with issue 22 item 3.
      if (detail.type === 'human_approval') {
        return { type: 'approval.requested', data: { ...base, step_id: stepId, prompt: asked?.prompt, approvers: asked?.approvers ?? [] } };
      }
      return { type: 'input.requested', data: { ...base, step_id: stepId, prompt: asked?.prompt, schema: asked?.schema } };
    }
    case 'step.approved':
    case 'step.rejected':
      return {
        type: 'approval.decided',
        data: { ...base, step_id: stepId, approved: entry.type === 'step.approved', decided_by: detail.decided_by, comment: detail.comment },
      };
    case 'step.input_received':
      return { type: 'input.submitted', data: { ...base, step_id: stepId, submitted_by: detail.by, data: step ? stepOutput(step) : null } };
    default:
      return null;
  }
}
