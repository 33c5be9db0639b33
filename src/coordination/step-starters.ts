import { SpanKind, traceparentOfSpan, tracer } from '../kernel/tracing.js';
import { randomBytes } from 'node:crypto';
import type { Tx } from '../db/tx.js';
import { iso } from '../kernel/clock.js';
import { ExpressionError, type Expressions } from '../kernel/expression-pool.js';
import { parseNullableJson } from '../kernel/json.js';
import type { AgentDirectory } from '../kernel/ports.js';
import { asList, DEFAULT_STEP_TIMEOUT_S, type StepTemplate } from './plan.js';
import {
  changeStep,
  completeStep,
  definition,
  failStep,
  NOT_STARTED,
  PLATFORM_SENDER,
  record,
  setStepDetail,
  skipStep,
  stepDetail,
  takeChildOutcome,
  templateScope,
  type Adaptive,
  type Revision,
  type RunContext,
  type StartRun,
  type StepState,
} from './run-state.js';
import type { CoordinationStore, RunRow, RunStepRow } from './store.js';
import { render, TemplateError, type TemplateScope } from './templates.js';

export const PLAN_STEP_EVENT = 'plan.step.execute';
/** sub_plan nesting beyond this fails the step (a plan that starts itself would never end). */
const MAX_DEPTH = 10;
const MAX_ITEMS = 1000;
const MAX_BACKOFF_S = 3600;
const DEFAULT_MAX_REVISIONS = 3;

/** A step cannot proceed with the run's data (an expression, a template value): the step fails, not the request. */
class StepError extends Error {}

export interface StepStarterDeps {
  store: CoordinationStore;
  directory: AgentDirectory;
  /** Evaluates conditions' and transforms' expressions (off the event loop, within a budget). */
  expressions: Expressions;
  /** Starts a sub_plan step's child run in the same transaction (the engine's `start`). */
  startChild: (tx: Tx, spec: StartRun, parent: { run: RunRow; stepId: string }) => Promise<RunRow>;
}

/**
 * Starts a ready step by its type: an agent step's message goes into the run's outbox, a human
 * step waits, a condition or transform completes at once, a wait sets its timer or topic, a
 * sub_plan starts its child run, a for_each group creates its items. An agent attempt that
 * failed starts again later (retry), with another agent (adaptive runs), or fails its step.
 */
export class StepStarters {
  constructor(private readonly deps: StepStarterDeps) {}

  async start(tx: Tx, ctx: RunContext, step: StepState): Promise<void> {
    const def = definition(ctx, step);
    const id = step.row.step_id;
    changeStep(step, { status: 'running', attempt: step.row.attempt + 1, started_at: ctx.now, wake_at: null, error: null });
    const scope = templateScope(ctx, step.row.item);
    const eventsBefore = ctx.events.length;
    try {
      switch (def.type) {
        case 'agent':
          return await this.startAgent(tx, ctx, step, def, scope);
        case 'human_approval':
        case 'human_input': {
          const input = { prompt: render(def.prompt, scope), ...(def.type === 'human_input' ? { schema: def.schema } : { approvers: def.approvers ?? [] }) };
          const timeout = def.type === 'human_approval' && def.timeout_seconds !== undefined ? ctx.now + def.timeout_seconds * 1000 : null;
          changeStep(step, { status: 'waiting', input: JSON.stringify(input), wake_at: timeout });
          setStepDetail(step, { ...stepDetail(step), wait_id: randomBytes(9).toString('base64url') });
          record(ctx, 'step.waiting', id, { type: def.type });
          return;
        }
        case 'condition': {
          const result = Boolean(await this.evaluate(def.expression!, scope));
          record(ctx, 'step.started', id, { attempt: step.row.attempt });
          completeStep(ctx, step, { result, branch: result ? 'then' : 'else' });
          for (const target of asList(result ? def.else : def.then)) {
            const other = ctx.steps.get(target)!;
            if (other.row.status === 'pending') skipStep(ctx, other, `condition '${id}' took the ${result ? 'then' : 'else'} branch`);
          }
          return;
        }
        case 'transform': {
          const output = def.expression !== undefined ? await this.evaluate(def.expression, scope) : render(def.output, scope);
          record(ctx, 'step.started', id, { attempt: step.row.attempt });
          completeStep(ctx, step, output ?? null);
          return;
        }
        case 'wait':
          return startWait(ctx, step, def, scope);
        case 'sub_plan':
          return await this.startSubPlan(tx, ctx, step, def, scope);
        case 'parallel':
          record(ctx, 'step.started', id, { attempt: step.row.attempt });
          if (def.for_each !== undefined) expand(ctx, step, def, scope);
          return;
      }
    } catch (err) {
      // Expressions and templates fail on the run's data, not on the server: the step fails.
      if (!(err instanceof StepError || err instanceof TemplateError)) throw err;
      // Some types announce the start before they evaluate anything: the timeline shows it once.
      const announced = ctx.events.slice(eventsBefore).some((e) => e.type === 'step.started' && e.step_id === id);
      if (!announced) record(ctx, 'step.started', id, { attempt: step.row.attempt });
      failStep(ctx, step, err.message);
    }
  }

  private async evaluate(expression: string, scope: TemplateScope): Promise<unknown> {
    try {
      return await this.deps.expressions.evaluate(expression, { input: scope.input, steps: scope.steps, event: scope.event, item: scope.item });
    } catch (err) {
      // Over budget, the message says so; a pool closing under way is not the step's fault.
      if (!(err instanceof ExpressionError)) throw err;
      throw new StepError(err.kind === 'budget' ? err.message : `expression failed: ${err.message}`);
    }
  }

  private async startAgent(tx: Tx, ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): Promise<void> {
    const detail = { ...stepDetail(step) };
    const input = (render(def.input ?? {}, scope) ?? {}) as Record<string, unknown>;
    let agent = detail.route_to ?? def.agent ?? null;
    if (agent === null) {
      const [first] = await this.deps.directory.lookup(tx, { capability: def.capability!, strategy: def.strategy, limit: 1 });
      agent = first?.agent_id ?? null;
    }
    changeStep(step, { input: JSON.stringify(input) });
    record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt, agent });
    if (agent === null) {
      await this.failAttempt(tx, ctx, step, `no healthy agent offers capability '${def.capability}'`);
      return;
    }
    // The agent's invocation (OTel GenAI conventions): the step message's send is its child, so
    // the agent's work, its acknowledgement and the steps that follows stay in the run's trace.
    const invocation = tracer().startSpan(`invoke_agent ${agent}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': agent,
        'switchboard.run.id': ctx.run.id,
        'switchboard.step.id': step.row.step_id,
        'switchboard.step.attempt': step.row.attempt,
      },
    });
    invocation.end();
    // Sent when the transition is saved (with the other messages it sends), which sets message_id.
    ctx.outbox.push({
      step,
      message: {
        traceparent: traceparentOfSpan(invocation),
        source: PLATFORM_SENDER,
        destination: agent,
        event_name: PLAN_STEP_EVENT,
        payload: { run_id: ctx.run.id, step_id: step.row.step_id, plan_id: ctx.run.plan_id, input },
        // Its acknowledgement or dead letter comes back to the `plan_step` outcome handler.
        origin: { kind: 'plan_step', ref: `${ctx.run.id}|${step.row.step_id}|${step.row.attempt}` },
      },
    });
    detail.tried = [...new Set([...(detail.tried ?? []), agent])];
    delete detail.route_to;
    setStepDetail(step, detail);
    changeStep(step, {
      agent_id: agent,
      capability: def.capability ?? null,
      message_id: null,
      wake_at: ctx.now + (def.timeout_seconds ?? DEFAULT_STEP_TIMEOUT_S) * 1000,
    });
  }

  private async startSubPlan(tx: Tx, ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): Promise<void> {
    const input = (render(def.input ?? {}, scope) ?? {}) as Record<string, unknown>;
    changeStep(step, { input: JSON.stringify(input) });
    record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt, plan_id: def.plan_id });
    if (ctx.run.depth + 1 > MAX_DEPTH) {
      failStep(ctx, step, `sub-plans nest deeper than ${MAX_DEPTH} levels`);
      return;
    }
    const plan = await this.deps.store.currentPlan(tx, def.plan_id!);
    if (!plan) {
      failStep(ctx, step, `plan '${def.plan_id}' does not exist`);
      return;
    }
    const child = await this.deps.startChild(
      tx,
      { planId: plan.id, planAlias: plan.alias, planVersion: plan.version, definition: plan.definition, definitionText: plan.text, input, event: ctx.event ?? undefined, createdBy: ctx.run.created_by },
      { run: ctx.run, stepId: step.row.step_id },
    );
    changeStep(step, { child_run_id: child.id });
    takeChildOutcome(ctx, step, child);
  }

  /**
   * An agent attempt failed: retry after backoff while attempts remain, then (adaptive runs)
   * re-route to another agent with the capability, else fail the step.
   */
  async failAttempt(tx: Tx, ctx: RunContext, step: StepState, reason: string): Promise<void> {
    const def = definition(ctx, step);
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
      const candidates = await this.deps.directory.lookup(tx, { capability: def.capability, strategy: def.strategy, limit: 50 });
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
}

function startWait(ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): void {
  record(ctx, 'step.started', step.row.step_id, { attempt: step.row.attempt });
  if (def.event !== undefined) {
    const match = def.event.match === undefined ? undefined : (render(def.event.match, scope) as Record<string, unknown>);
    setStepDetail(step, match === undefined ? {} : { match });
    changeStep(step, { wait_topic: def.event.topic, input: JSON.stringify({ topic: def.event.topic, match: match ?? null }) });
    return;
  }
  let until: number;
  if (def.seconds !== undefined) until = ctx.now + def.seconds * 1000;
  else {
    const text = render(def.until, scope);
    until = typeof text === 'string' ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(until)) throw new StepError(`until '${String(text)}' is not an ISO 8601 time`);
  }
  changeStep(step, { wake_at: until, input: JSON.stringify({ until: iso(until) }) });
}

/** Creates one step per item of a for_each (kept across a redrive: items already done stay done). */
function expand(ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope): void {
  const id = step.row.step_id;
  const existing = [...ctx.steps.values()].some((s) => s.row.parent_step_id === id);
  if (existing) return;
  const items = render(def.for_each, scope);
  if (!Array.isArray(items)) throw new StepError(`for_each yielded ${items === null ? 'null' : typeof items}, not an array`);
  if (items.length > MAX_ITEMS) throw new StepError(`for_each yielded ${items.length} items; at most ${MAX_ITEMS}`);
  items.forEach((item, index) => {
    const instanceId = `${id}[${index}]`;
    const row: RunStepRow = {
      ...step.row,
      step_id: instanceId,
      parent_step_id: id,
      item_index: index,
      item: JSON.stringify(item ?? null),
      ...NOT_STARTED,
    };
    ctx.steps.set(instanceId, { row, dirty: true });
  });
}

