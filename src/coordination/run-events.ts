/**
 * What a transition tells the event log: the run's timeline entries that matter to someone
 * outside, as log events with what a listener needs without a second call.
 */

import { approverAgent, approverAgents } from './approvers.js';
import { iso } from '../kernel/clock.js';
import type { DomainMetrics, FinishedRunStatus } from '../kernel/metrics.js';
import type { NewEvent, OutgoingMessage, PayloadRef } from '../kernel/ports.js';
import { parseNullableJson } from '../kernel/json.js';
import { APPROVAL_LINK_TTL_MS, type ApprovalClaim } from './approval-links.js';
import { PLATFORM_SENDER, stepDetail, stepOutput, type RunContext, type StepState } from './run-state.js';
import { kindOfStep, type Asked } from './steps/index.js';
import type { NewRunEvent } from './run-list-store.js';

/** Makes the approval link of a claim (approval-links.ts). */
export type Linker = (claim: ApprovalClaim) => string;

/** A human step that started waiting in this transition: what it asks, of whom, and its link's claim. */
interface HumanAsk {
  type: Asked['event'];
  data: Record<string, unknown>;
  claim: ApprovalClaim;
  /** Who may decide (human_approval's `approvers`: agents, users, roles); empty: anyone with approvals:decide. */
  approvers: string[];
}

/** Whether a transition's timeline asks people for a human step (its events, notifications and messages need approval links). */
export function asksForHumans(ctx: RunContext): boolean {
  return ctx.events.some((entry) => entry.type === 'step.waiting' || entry.type === 'step.reminded' || entry.type === 'step.escalated');
}

/** The log events of a transition's timeline entries, in order (subject: the run). */
export function logEventsOf(ctx: RunContext, link: Linker | null): NewEvent[] {
  const events: NewEvent[] = [];
  for (const entry of ctx.events) {
    const ask = entry.type === 'step.waiting' ? humanAsk(ctx, entry) : null;
    const event = ask
      ? {
          type: ask.type,
          data: { ...ask.data, approve_url: link!(ask.claim) },
          // What a step asks is for its approvers: when it names some, agents read it only if named.
          ...(ask.approvers.length > 0 ? { readers: { agents: approverAgents(ask.approvers) } } : {}),
        }
      : logEventOf(ctx, entry);
    if (event) events.push({ ...event, subject: ctx.run.id, actor: ctx.actor, reason: ctx.reason });
  }
  return events;
}

/** An `approval.requested` message for each approver of a step that started waiting, with its own link. */
export function approverMessagesOf(ctx: RunContext, link: Linker): OutgoingMessage[] {
  const messages: OutgoingMessage[] = [];
  for (const entry of ctx.events) {
    const ask = entry.type === 'step.waiting' ? humanAsk(ctx, entry) : null;
    // Agents get theirs in their inbox; people (user:, role:) find the step in the console.
    for (const approver of ask?.approvers ?? []) {
      const agent = approverAgent(approver);
      if (agent === null) continue;
      messages.push({
        source: PLATFORM_SENDER,
        destination: agent,
        event_name: 'approval.requested',
        payload: { ...ask!.data, approve_url: link({ ...ask!.claim, approver }) },
      });
    }
  }
  return messages;
}

/** The claim of a link to a waiting human step's current wait: it expires with the step (or after the default TTL). */
export function linkClaim(ctx: RunContext, step: StepState, approver: string | null): ApprovalClaim {
  const expiresAt = step.row.wake_at ?? (step.row.started_at ?? ctx.now) + APPROVAL_LINK_TTL_MS;
  return { runId: ctx.run.id, stepId: step.row.step_id, waitId: stepDetail(step).wait_id ?? '', expiresAt, approver };
}

function humanAsk(ctx: RunContext, entry: NewRunEvent): HumanAsk | null {
  const step = entry.step_id ? ctx.steps.get(entry.step_id) : undefined;
  const asked = step && kindOfStep(ctx, step).asked?.(step);
  if (!step || !asked) return null;
  const claim = linkClaim(ctx, step, null);
  const base = {
    run_id: ctx.run.id,
    plan_id: ctx.run.plan_id,
    plan_version: ctx.run.plan_version,
    step_id: step.row.step_id,
    expires_at: iso(claim.expiresAt),
  };
  const { event, prompt, schema, approvers } = asked;
  const data = { ...base, prompt, ...(approvers !== undefined && { approvers }), ...(schema !== undefined && { schema }) };
  return { type: event, data, claim, approvers: approvers ?? [] };
}

/** Who reads what a waiting step asks: when it names approvers, of the agents only those named. */
function askReaders(step: StepState | undefined): Pick<NewEvent, 'readers'> {
  const approvers = (step && (parseNullableJson(step.row.input) as { approvers?: string[] } | null)?.approvers) ?? [];
  return approvers.length > 0 ? { readers: { agents: approverAgents(approvers) } } : {};
}

/** A completed step's output for its event: the reference alone when it came by reference (the log keeps no copy). */
function outputOf(step: StepState | undefined): { output: unknown; output_ref?: PayloadRef } {
  if (step?.row.output_ref) return { output: null, output_ref: JSON.parse(step.row.output_ref) as PayloadRef };
  return { output: step ? stepOutput(step) : null };
}

/** A completed run's output for its event: the reference alone when it is kept by reference. */
function runOutputOf(run: RunContext['run']): { output: unknown; output_ref?: PayloadRef } {
  if (run.output_ref !== null) return { output: null, output_ref: JSON.parse(run.output_ref) as PayloadRef };
  return { output: parseNullableJson(run.output) };
}

function logEventOf(ctx: RunContext, entry: NewRunEvent): Pick<NewEvent, 'type' | 'data' | 'readers'> | null {
  const { run } = ctx;
  const detail = JSON.parse(entry.detail) as Record<string, unknown>;
  const base = { run_id: run.id, plan_id: run.plan_id, plan_version: run.plan_version };
  const stepId = entry.step_id ?? null;
  const step = stepId === null ? undefined : ctx.steps.get(stepId);
  switch (entry.type) {
    case 'run.started':
      return {
        type: 'run.started',
        // A run its plan's limits hold starts queued.
        data: { ...base, status: run.status === 'queued' ? 'queued' : 'running', parent_run_id: run.parent_run_id },
      };
    case 'run.waiting':
      return { type: 'run.waiting', data: { ...base, status: 'waiting' } };
    case 'run.redriven':
      return { type: 'run.redriven', data: { ...base, status: 'running', steps: detail.steps } };
    case 'run.completed':
      return { type: 'run.completed', data: { ...base, status: 'completed', ...runOutputOf(run) } };
    case 'run.failed':
    case 'run.cancelled':
      return { type: entry.type, data: { ...base, status: entry.type.slice('run.'.length), error: run.error } };
    case 'step.completed':
      return {
        type: 'run.step.completed',
        data: { ...base, step_id: stepId, attempt: detail.attempt, ...outputOf(step) },
      };
    case 'step.failed':
      return { type: 'run.step.failed', data: { ...base, step_id: stepId, attempt: detail.attempt, error: detail.error } };
    case 'step.approved':
    case 'step.rejected':
      return {
        type: 'approval.decided',
        data: {
          ...base,
          step_id: stepId,
          approved: entry.type === 'step.approved',
          decided_by: detail.decided_by,
          comment: detail.comment,
        },
      };
    case 'step.reminded':
      return { type: 'approval.reminded', data: { ...base, step_id: stepId }, ...askReaders(step) };
    case 'step.escalated':
      return {
        type: 'approval.escalated',
        data: { ...base, step_id: stepId, added_approvers: detail.added_approvers },
        ...askReaders(step),
      };
    case 'step.input_received':
      return { type: 'input.submitted', data: { ...base, step_id: stepId, submitted_by: detail.by, data: step ? stepOutput(step) : null } };
    default:
      return null;
  }
}

/** Counts what saved transitions did: runs started and finished, steps finished with their time. */
export function countTransitions(metrics: DomainMetrics, contexts: RunContext[]): void {
  for (const ctx of contexts) {
    for (const entry of ctx.events) {
      if (entry.type === 'run.started') metrics.runStarted();
      else if (entry.type === 'run.completed' || entry.type === 'run.failed' || entry.type === 'run.cancelled')
        metrics.runFinished(entry.type.slice('run.'.length) as FinishedRunStatus);
      else if (entry.type === 'step.completed' || entry.type === 'step.failed') {
        const startedAt = entry.step_id ? (ctx.steps.get(entry.step_id)?.row.started_at ?? null) : null;
        if (startedAt !== null)
          metrics.stepFinished(entry.type === 'step.completed' ? 'completed' : 'failed', (entry.created_at - startedAt) / 1000);
      }
    }
  }
}
