import type { Tx } from '../../kernel/tx.js';
import { ExpressionError, type Expressions } from '../../kernel/expression-pool.js';
import type { AgentDirectory, MessageOutcome, PublishedEvent } from '../../kernel/ports.js';
import type { AgentPauses } from '../../kernel/usage-ports.js';
import type { Decider } from '../approvers.js';
import type { CompiledStep, StepDefinition, StepTemplate } from '../plan-definition.js';
import type { RunContext, StartRun, StepState } from '../run-state.js';
import type { StepWorkStore } from '../step-work-store.js';
import type { PlanStore } from '../plan-store.js';
import type { RunRow } from '../run-list-store.js';
import type { TemplateScope } from '../templates.js';

/** A step cannot proceed with the run's data (an expression, a template value): the step fails, not the request. */
export class StepError extends Error {}

/** Reports a field problem of a plan being saved. */
export type Report = (field: string, message: string) => void;

/** What a kind's field checks are given: where the step is in the plan and how to report. */
export interface FieldCheck {
  /** The step's path in the plan (`steps[2]`, `steps[2].step`). */
  at: string;
  problem: Report;
  /** False for a for_each's repeated `step`. */
  topLevel: boolean;
  /** Checks the step a for_each repeats: a kind that may be repeated, with valid fields. */
  checkRepeated(template: StepTemplate, at: string): void;
}

/** What a kind's reference checks are given: every step id of the plan, and the parallel groups seen so far. */
export interface ReferenceCheck {
  at: string;
  problem: Report;
  ids: ReadonlyMap<string, number>;
  /** Which parallel step holds a step (a step is in one group at most). */
  groupOf: Map<string, string>;
}

/**
 * What kinds reach outside the run in memory, passed in by the engine: kinds never import the
 * engine (its runs start and cancel child runs through here), nor the inbox but through a step's
 * outbox and this cancel.
 */
export interface StepPorts {
  directory: AgentDirectory;
  /** What budgets pause: an agent step for a paused agent, capability or plan waits before it sends. */
  pauses: AgentPauses;
  /** Evaluates conditions' and transforms' expressions (off the event loop, within a budget). */
  expressions: Expressions;
  /** The newest version of a plan (the one a sub_plan's child run pins). */
  plans: Pick<PlanStore, 'currentPlan'>;
  /** A step's latest checkpoint, which the message of its next attempt carries. */
  checkpoints: Pick<StepWorkStore, 'checkpointOf'>;
  /** A step output kept by reference (its run_steps.output_ref), read back from its artifact. */
  readOutput(tx: Tx, ref: string): Promise<unknown>;
  /** Withdraws a step's unacknowledged message (sent first when the transition has yet to send it). */
  cancelMessage(tx: Tx, ctx: RunContext, step: StepState, reason: string): Promise<void>;
  /** Starts a sub_plan step's child run in the same transaction. */
  startChild(tx: Tx, spec: StartRun, parent: { run: RunRow; stepId: string }): Promise<RunRow>;
  /** Cancels a child run whose parent step stops. */
  cancelChild(tx: Tx, runId: string, reason: string): Promise<void>;
}

/** A person's (or a named agent's) decision of a human step, by the kind it is for. */
export type HumanDecision =
  { type: 'human_approval'; approved: boolean; comment: string | null } | { type: 'human_input'; data: Record<string, unknown> };

/** What a waiting human step asks, as its events, messages and link page show it. */
export interface Asked {
  event: 'approval.requested' | 'input.requested';
  prompt: string | null;
  /** human_input: the JSON Schema the data must match. */
  schema?: Record<string, unknown>;
  /** human_approval: who may decide (agents, users, roles); empty: anyone with approvals:decide. */
  approvers?: string[];
}

/**
 * One kind of plan step: the rules of its fields when a plan is saved, and its transitions over
 * the run context (start, timer, outcome, decision, withdrawal). The engine calls these through
 * the registry (steps/index.ts) and knows no kind by name. Hooks a kind has no use for are left out.
 */
export interface StepKind {
  /** A for_each may repeat it (one step per item). */
  readonly repeatable: boolean;
  /** Its `step` field is the step its for_each repeats (no other kind has a `step`). */
  readonly repeatsStep?: boolean;
  /** The fields it requires or forbids. */
  checkFields(step: StepTemplate & { step?: StepTemplate }, check: FieldCheck): void;
  /** The steps it names must exist in the plan. */
  checkReferences?(step: StepDefinition, check: ReferenceCheck): void;
  /** The plan it starts, which must exist when the plan is saved. */
  planOf?(step: StepTemplate): string | undefined;
  /** The step with what the spec lets it leave out filled in, as it is saved (and shown). */
  withDefaults?(step: StepDefinition, alias: string): StepDefinition;
  /** Adds its edges to the compiled plan (steps that wait for it or run inside it). */
  link?(def: StepDefinition, steps: Map<string, CompiledStep>): void;
  /** Members of it in flight at once, when it holds members. */
  memberLimit?(def: StepTemplate): number;

  /** Starts a ready step (already `running`, its attempt counted); may throw StepError or TemplateError to fail it. */
  start(tx: Tx, ctx: RunContext, step: StepState, def: StepTemplate, scope: TemplateScope, ports: StepPorts): Promise<void>;
  /** Its in-flight timer (`wake_at`) is due: a timeout, a deadline, the end of a wait. */
  onTimer?(tx: Tx, ctx: RunContext, step: StepState, def: StepTemplate, ports: StepPorts): Promise<void>;
  /** Stops what a running step has in flight outside the run (its message, its child run). */
  withdraw?(tx: Tx, ctx: RunContext, step: StepState, reason: string, ports: StepPorts): Promise<void>;
  /** A running group: completes or fails with its members; true when it moved. Such a step only reflects its members. */
  settle?(tx: Tx, ctx: RunContext, step: StepState, def: StepTemplate, ports: StepPorts): Promise<boolean>;
  /** While running it waits on the world outside the run (a time, an event), as a waiting human step does. */
  readonly waitsOutside?: boolean;
  /** The outcome of the message of one of its attempts (`attempt` as its origin names it); true when it moved. */
  onOutcome?(tx: Tx, ctx: RunContext, step: StepState, outcome: MessageOutcome, attempt: string, ports: StepPorts): Promise<boolean>;
  /** A failed step whose dead letter was redriven as `messageId`: it runs again in the same attempt, awaiting that message. */
  resume?(ctx: RunContext, step: StepState, messageId: string): void;
  /** A published event on a topic it waits for; true when it moved. */
  onEvent?(ctx: RunContext, step: StepState, event: PublishedEvent): boolean;
  /** Its child run finished; true when it moved. */
  onChildFinished?(ctx: RunContext, step: StepState, child: RunRow): boolean;

  /** A human step: what it asks of whom. */
  asked?(step: StepState): Asked;
  /** A human step: decides it as `by` (may refuse with Forbidden or InvalidRequest). */
  decide?(ctx: RunContext, step: StepState, def: StepTemplate, decision: HumanDecision, by: Decider): void;
  /** A human step: who decided it and when, once it was. */
  decidedBy?(step: StepState): { by: string; at: string } | null;
}

/** Evaluates a step's JSONata expression; a failure on the run's data fails the step. */
export async function evaluate(ports: StepPorts, expression: string, scope: TemplateScope): Promise<unknown> {
  try {
    return await ports.expressions.evaluate(expression, { input: scope.input, steps: scope.steps, event: scope.event, item: scope.item });
  } catch (err) {
    // Over budget, the message says so; a pool closing under way is not the step's fault.
    if (!(err instanceof ExpressionError)) throw err;
    throw new StepError(err.kind === 'budget' ? err.message : `expression failed: ${err.message}`);
  }
}

/** Reports `key` missing when a kind requires it. */
export function requireField(step: StepTemplate, key: keyof StepTemplate, { at, problem }: Pick<FieldCheck, 'at' | 'problem'>): void {
  if (step[key] === undefined) problem(`${at}.${key}`, `is required for a ${step.type} step`);
}
