import type { Tx } from '../../kernel/tx.js';
import { iso } from '../../kernel/clock.js';
import { parseNullableJson } from '../../kernel/json.js';
import { SpanKind, startSpan, traceparentOfSpan } from '../../kernel/tracing.js';
import type { StepTemplate } from '../plan-definition.js';
import {
  changeStep,
  completeStep,
  definition,
  failStep,
  PLATFORM_SENDER,
  record,
  setStepDetail,
  stepDetail,
  type Adaptive,
  type Revision,
  type RunContext,
  type StepState,
} from '../run-state.js';
import { CHECKPOINT_FIELD, toCheckpoint } from '../checkpoints.js';
import { render } from '../templates.js';
import type { StepBlockedBy } from '../tables.js';
import type { StepKind, StepPorts } from './kind.js';

/** The event name of an agent step's message. */
export const PLAN_STEP_EVENT = 'plan.step.execute';
export const DEFAULT_STEP_TIMEOUT_S = 3600;
const MAX_BACKOFF_S = 3600;
const DEFAULT_MAX_REVISIONS = 3;
/** How often a step waiting for an agent looks again without being told of a change. */
const NO_AGENT_RECHECK_MS = 5000;

/** The origin ref of an attempt's message, `run|step|attempt`: its outcome comes back to this attempt only. */
export const attemptRef = (runId: string, stepId: string, attempt: number) => `${runId}|${stepId}|${attempt}`;

/** A ref's run, step and attempt. */
export function parseAttemptRef(ref: string): { runId: string; stepId: string; attempt: string } {
  const [runId, stepId, attempt] = ref.split('|');
  return { runId: runId!, stepId: stepId!, attempt: attempt! };
}

/**
 * An agent step: a message to the agent it names, or to one discovery finds with its capability,
 * sent with the transition that starts it; its acknowledgement completes it. A failed attempt
 * (a dead letter, no acknowledgement in time, no agent) runs again after a backoff while
 * attempts remain, then (adaptive runs) goes to another agent with the capability, else fails.
 */
export const agent: StepKind = {
  repeatable: true,

  checkFields(step, { at, problem }) {
    if ((step.agent === undefined) === (step.capability === undefined))
      problem(`${at}.agent`, 'an agent step names exactly one of agent or capability');
    if (step.strategy !== undefined && step.capability === undefined) problem(`${at}.strategy`, 'is only used with capability');
  },

  async start(tx, ctx, step, def, scope, ports) {
    const input = stepDetail(step).input_override ?? ((render(def.input ?? {}, scope) ?? {}) as Record<string, unknown>);
    changeStep(step, { input: JSON.stringify(input), capability: def.capability ?? null });
    const target = await targetOf(tx, ctx, step, def, ports);
    record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt, agent: 'agent' in target ? target.agent : null });
    if ('blocked_by' in target) {
      waitForAgent(ctx, step, def, target.blocked_by);
      return;
    }
    await dispatch(tx, ctx, step, def, target.agent, ports);
  },

  async onTimer(tx, ctx, step, def, ports) {
    if (step.row.status === 'waiting') {
      await recheckAgents(tx, ctx, step, def, ports);
      return;
    }
    await ports.cancelMessage(tx, ctx, step, 'step timed out');
    const seconds = def.timeout_seconds ?? DEFAULT_STEP_TIMEOUT_S;
    await failAttempt(tx, ctx, step, `timed out after ${seconds} s without an acknowledgement`, ports);
  },

  async withdraw(tx, ctx, step, reason, ports) {
    await ports.cancelMessage(tx, ctx, step, reason);
  },

  resume(ctx, step, messageId) {
    const def = definition(ctx, step);
    changeStep(step, {
      status: 'running',
      message_id: messageId,
      error: null,
      output: null,
      completed_at: null,
      wake_at: ctx.now + (def.timeout_seconds ?? DEFAULT_STEP_TIMEOUT_S) * 1000,
    });
  },

  async onOutcome(tx, ctx, step, outcome, attempt, ports) {
    // An outcome for an attempt the run has moved past (timed out, cancelled) changes nothing.
    if (step.row.status !== 'running' || String(step.row.attempt) !== attempt || step.row.message_id !== outcome.message_id) return false;
    if (outcome.status === 'acknowledged') completeStep(ctx, step, outcome.output ?? {}, outcome.output_ref);
    else await failAttempt(tx, ctx, step, outcome.reason ?? 'dead-lettered', ports);
    return true;
  },
};

/**
 * The agent the attempt goes to now, or why it waits. A budget that pauses the run's plan, the
 * step's capability or its agent (every agent, for a global one) holds the step before it sends,
 * where the reason shows on the step: inboxes hold by agent only (a step message names no
 * capability, and a claim would have to read payloads to find its plan).
 */
async function targetOf(
  tx: Tx,
  ctx: RunContext,
  step: StepState,
  def: StepTemplate,
  ports: StepPorts,
): Promise<{ agent: string } | { blocked_by: StepBlockedBy }> {
  const pauses = await ports.pauses.pauses(tx);
  const named = stepDetail(step).route_to ?? def.agent ?? null;
  if (
    !pauses.none &&
    (pauses.plan(ctx.run.plan_id) ||
      (def.capability !== undefined && pauses.capability(def.capability)) ||
      (named !== null && pauses.agent(named)))
  )
    return { blocked_by: 'budget' };
  const agentId = named ?? (await findAgent(tx, def, ports));
  return agentId !== null ? { agent: agentId } : { blocked_by: await noAgentBecause(tx, def, ports) };
}

/** The first healthy agent with the step's capability (null: none now). */
async function findAgent(tx: Tx, def: StepTemplate, ports: StepPorts): Promise<string | null> {
  const [first] = await ports.directory.lookup(tx, { capability: def.capability!, strategy: def.strategy, limit: 1 });
  return first?.agent_id ?? null;
}

/** Why no agent takes the step: every healthy one is paused by a budget, or there is none. */
async function noAgentBecause(tx: Tx, def: StepTemplate, ports: StepPorts): Promise<StepBlockedBy> {
  const paused = await ports.directory.lookup(tx, { capability: def.capability!, limit: 1, include_paused: true });
  return paused.length > 0 ? 'budget' : 'no_agent';
}

/** When the step gives up on its attempt: its timeout from the attempt's start. */
const deadlineOf = (step: StepState, def: StepTemplate) => step.row.started_at! + (def.timeout_seconds ?? DEFAULT_STEP_TIMEOUT_S) * 1000;

/**
 * No healthy agent has the capability (workers redeploying), or a budget paused every one: the
 * step waits for one, looking again when discovery changes (the engine's `onAgentsChanged`) and
 * every few seconds (health comes back with heartbeats, and a pause ends with its period, which
 * announce nothing), until its timeout.
 */
function waitForAgent(ctx: RunContext, step: StepState, def: StepTemplate, reason: StepBlockedBy): void {
  const blocked = stepDetail(step).blocked_by === reason;
  setStepDetail(step, { ...stepDetail(step), blocked_by: reason });
  changeStep(step, {
    status: 'waiting',
    agent_id: null,
    message_id: null,
    wake_at: Math.min(ctx.now + NO_AGENT_RECHECK_MS, deadlineOf(step, def)),
  });
  if (!blocked) record(ctx, 'step.blocked', step.row.step_id, { blocked_by: reason, capability: def.capability });
}

async function recheckAgents(tx: Tx, ctx: RunContext, step: StepState, def: StepTemplate, ports: StepPorts): Promise<void> {
  const target = await targetOf(tx, ctx, step, def, ports);
  if ('agent' in target) {
    const { blocked_by: _, ...detail } = stepDetail(step);
    setStepDetail(step, detail);
    record(ctx, 'step.unblocked', step.row.step_id, { agent: target.agent });
    await dispatch(tx, ctx, step, def, target.agent, ports);
  } else if (ctx.now >= deadlineOf(step, def)) {
    const { blocked_by: _, ...detail } = stepDetail(step);
    setStepDetail(step, detail);
    changeStep(step, { status: 'running' });
    const seconds = def.timeout_seconds ?? DEFAULT_STEP_TIMEOUT_S;
    const reason =
      target.blocked_by === 'budget'
        ? `a budget paused the step's agents, capability or plan for ${seconds} s`
        : `no healthy agent offered capability '${def.capability}' within ${seconds} s`;
    await failAttempt(tx, ctx, step, reason, ports);
  } else {
    waitForAgent(ctx, step, def, target.blocked_by);
  }
}

/** Sends the attempt's message to `agentId` (when the transition is saved); the step runs until its timeout. */
async function dispatch(tx: Tx, ctx: RunContext, step: StepState, def: StepTemplate, agentId: string, ports: StepPorts): Promise<void> {
  // A later attempt resumes from the checkpoint an earlier one saved.
  const saved = step.row.attempt > 1 ? await ports.checkpoints.checkpointOf(tx, ctx.run.id, step.row.step_id) : undefined;
  const checkpoint = saved ? { [CHECKPOINT_FIELD]: toCheckpoint(saved) } : {};
  // The agent's invocation (OTel GenAI conventions): the step message's send is its child, so
  // the agent's work, its acknowledgement and the steps that follows stay in the run's trace.
  const invocation = startSpan(`invoke_agent ${agentId}`, {
    kind: SpanKind.CLIENT,
    attributes: () => ({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': agentId,
      'switchboard.run.id': ctx.run.id,
      'switchboard.step.id': step.row.step_id,
      'switchboard.step.attempt': step.row.attempt,
    }),
  });
  invocation.end();
  // Sent when the transition is saved (with the other messages it sends), which sets message_id.
  ctx.outbox.push({
    step,
    message: {
      traceparent: traceparentOfSpan(invocation),
      source: PLATFORM_SENDER,
      destination: agentId,
      event_name: PLAN_STEP_EVENT,
      payload: {
        run_id: ctx.run.id,
        step_id: step.row.step_id,
        plan_id: ctx.run.plan_id,
        input: JSON.parse(step.row.input ?? '{}'),
        ...checkpoint,
      },
      // Its acknowledgement or dead letter comes back to the `plan_step` outcome handler.
      origin: { kind: 'plan_step', ref: attemptRef(ctx.run.id, step.row.step_id, step.row.attempt) },
      capability: def.capability,
    },
  });
  const { route_to: _, ...detail } = stepDetail(step);
  setStepDetail(step, { ...detail, tried: [...new Set([...(detail.tried ?? []), agentId])] });
  changeStep(step, { status: 'running', agent_id: agentId, message_id: null, wake_at: deadlineOf(step, def) });
}

/**
 * An agent attempt failed: retry after backoff while attempts remain, then (adaptive runs)
 * re-route to another agent with the capability, else fail the step.
 */
async function failAttempt(tx: Tx, ctx: RunContext, step: StepState, reason: string, ports: StepPorts): Promise<void> {
  const def: StepTemplate = definition(ctx, step);
  const detail = { ...stepDetail(step) };
  const maxAttempts = def.retry?.max_attempts ?? 1;
  const used = step.row.attempt - (detail.attempt_base ?? 0);
  if (used < maxAttempts) {
    const backoff = Math.min(MAX_BACKOFF_S, (def.retry?.backoff_seconds ?? 0) * 2 ** (used - 1));
    const retryAt = ctx.now + backoff * 1000;
    changeStep(step, { status: 'pending', error: reason, wake_at: retryAt, message_id: null });
    record(ctx, 'step.retrying', step.row.step_id, { attempt: step.row.attempt, error: reason, retry_at: iso(retryAt) });
    return;
  }
  const adaptive = parseNullableJson(ctx.run.adaptive) as Adaptive | null;
  const revisions = JSON.parse(ctx.run.revisions) as Revision[];
  if (adaptive?.enabled && def.capability !== undefined && revisions.length < (adaptive.max_revisions ?? DEFAULT_MAX_REVISIONS)) {
    const candidates = await ports.directory.lookup(tx, { capability: def.capability, strategy: def.strategy, limit: 50 });
    const next = candidates.find((c) => !(detail.tried ?? []).includes(c.agent_id));
    if (next) {
      const revision: Revision = {
        step: step.row.step_id,
        reason,
        change: { action: 'reroute', from_agent: step.row.agent_id, to_agent: next.agent_id },
        at: iso(ctx.now),
      };
      ctx.run.revisions = JSON.stringify([...revisions, revision]);
      setStepDetail(step, { ...detail, route_to: next.agent_id, attempt_base: step.row.attempt });
      changeStep(step, { status: 'pending', error: reason, wake_at: null, message_id: null });
      record(ctx, 'run.revised', step.row.step_id, { reason, change: revision.change });
      return;
    }
  }
  failStep(ctx, step, reason);
}
