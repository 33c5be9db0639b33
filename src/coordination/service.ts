import { assertMayChange, type Changer } from '../auth/ownership.js';
import type { Principal } from '../auth/principal.js';
import { autocommit, type Tx } from '../db/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { AuditTrail, PublishedEvent } from '../kernel/ports.js';
import { topicMatches } from '../kernel/topics.js';
import type { ApprovalClaim, ApprovalLinks } from './approval-links.js';
import { approverAgent, approverUser, decisionRefusal, personDecider, type Decider, type People } from './approvers.js';
import { COORDINATION_CHANGED, type RunEngine } from './engine.js';
import { validatePlan, withStepDefaults } from './plan.js';
import type { PlanDefinition, StepDefinition } from './plan-definition.js';
import { kindOf, type HumanDecision } from './steps/index.js';
import { RUN_FINISHED, type Adaptive, type Revision } from './run-state.js';
import type { CoordinationStore, PendingHumanStepRow, PlanRow, PlanVersionRow, RunEventRow, RunRow, RunStepRow } from './store.js';
import type { ApprovalLink, LinkDecision, LinkedStep, PendingApproval } from './schemas.js';
import { linkClaim } from './run-events.js';
import type { RunStatus, StepStatus } from './tables.js';
import { parseNullableJson } from '../kernel/json.js';

/** The event's link is seen by every reader of the event log: it points at the step, and a signed-in person decides. */
function unaddressedLink(claim: ApprovalClaim): Forbidden {
  return new Forbidden(
    `This link shows the step but decides nothing by itself (everyone who reads the event log has it): sign in to the console to decide, or POST /api/v1/coordination/runs/${claim.runId}/steps/${claim.stepId}/approve with 'approvals:decide'`,
  );
}

/** Who calls: plans and runs are shared; changing them is for their creator and the platform (auth/ownership.ts). */
export interface Caller extends Changer {
  actor: string;
  /** Who the caller is when it decides a human step. */
  decider: Decider;
}

export const callerOf = (principal: Principal): Caller => ({
  actor: principal.actor,
  kind: principal.kind,
  agentId: principal.agentId,
  decider: {
    kind: principal.kind,
    id: principal.user?.id ?? (principal.kind === 'key' ? principal.keyId! : (principal.agentId ?? principal.actor)),
    actor: principal.actor,
    agentId: principal.agentId,
    role: principal.role,
    mayDecide: principal.permissions.has('approvals:decide'),
    overrides: principal.role === 'admin',
  },
});

export interface Plan {
  id: string;
  alias: string;
  description: string | null;
  steps: StepDefinition[];
  output: Record<string, unknown> | null;
  version: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/** GET /coordination/runs's filters (times as ISO 8601). */
export interface RunListQuery {
  plan_id?: string;
  status?: RunStatus;
  started_after?: string;
  started_before?: string;
  tag?: string;
}

export interface RunStep {
  id: string;
  type: string;
  status: StepStatus;
  attempt: number;
  agent: string | null;
  child_run_id: string | null;
  started_at: string | null;
  completed_at: string | null;
  input: unknown;
  output: unknown;
  error: string | null;
}

export interface Run {
  id: string;
  plan_id: string;
  plan_version: number;
  status: RunStatus;
  current_step: string | null;
  input: Record<string, unknown>;
  output: unknown;
  error: string | null;
  adaptive: Adaptive | null;
  revisions: Revision[];
  parent_run_id: string | null;
  steps: RunStep[];
  tags: string[];
  created_by: string;
  started_at: string;
  completed_at: string | null;
}

export interface RunEvent {
  seq: number;
  type: string;
  step_id: string | null;
  detail: Record<string, unknown>;
  at: string;
}

export interface PlanInput {
  alias: string;
  description?: string;
  steps: StepDefinition[];
  output?: Record<string, unknown>;
}

/** `created_by` is the plan's creator, who owns every version (auth/ownership.ts), not the version's author. */
function toPlan(plan: Pick<PlanRow, 'id' | 'created_by' | 'created_at'>, version: PlanVersionRow, updatedAt: number): Plan {
  const definition = JSON.parse(version.definition) as PlanDefinition;
  return {
    id: plan.id,
    alias: version.alias,
    description: definition.description ?? null,
    steps: definition.steps,
    output: definition.output ?? null,
    version: version.version,
    created_by: plan.created_by,
    created_at: iso(plan.created_at),
    updated_at: iso(updatedAt),
  };
}

/** How many waiting human steps oldestWaitingInput reads at a time (approvals and inputs interleave). */
const WAITING_INPUT_BATCH = 100;

function toPendingApproval(row: PendingHumanStepRow): PendingApproval {
  // What a human step asks (steps/human.ts): every human_approval lists its approvers (maybe none), a human_input never does.
  const asked = (parseNullableJson(row.input) ?? {}) as { prompt?: string; schema?: Record<string, unknown>; approvers?: string[] };
  const approval = asked.approvers !== undefined;
  return {
    run_id: row.run_id,
    plan_id: row.plan_id,
    step_id: row.step_id,
    type: approval ? 'human_approval' : 'human_input',
    prompt: asked.prompt ?? null,
    schema: approval ? null : (asked.schema ?? {}),
    approvers: asked.approvers ?? [],
    run_input: JSON.parse(row.run_input) as Record<string, unknown>,
    waiting_since: iso(row.started_at),
    expires_at: iso(row.wake_at),
  };
}

function toRun(run: RunRow, steps: RunStepRow[], tags: string[]): Run {
  const definition = JSON.parse(run.definition) as PlanDefinition;
  const types = new Map(definition.steps.map((s) => [s.id, s]));
  const typeOf = (row: RunStepRow) => {
    if (row.parent_step_id !== null) return types.get(row.parent_step_id)?.step?.type ?? 'agent';
    return types.get(row.step_id)?.type ?? 'agent';
  };
  const current = RUN_FINISHED.has(run.status) ? undefined : steps.find((s) => s.status === 'running' || s.status === 'waiting');
  return {
    id: run.id,
    plan_id: run.plan_id,
    plan_version: run.plan_version,
    status: run.status,
    current_step: current?.step_id ?? null,
    input: JSON.parse(run.input) as Record<string, unknown>,
    output: parseNullableJson(run.output),
    error: run.error,
    adaptive: parseNullableJson(run.adaptive) as Adaptive | null,
    revisions: JSON.parse(run.revisions) as Revision[],
    parent_run_id: run.parent_run_id,
    tags,
    steps: steps.map((s) => ({
      id: s.step_id,
      type: typeOf(s),
      status: s.status,
      attempt: s.attempt,
      agent: s.agent_id,
      child_run_id: s.child_run_id,
      started_at: iso(s.started_at),
      completed_at: iso(s.completed_at),
      input: parseNullableJson(s.input),
      output: parseNullableJson(s.output),
      error: s.error,
    })),
    created_by: run.created_by,
    started_at: iso(run.started_at),
    completed_at: iso(run.completed_at),
  };
}

function toEvent(row: RunEventRow): RunEvent {
  return { seq: Number(row.seq), type: row.type, step_id: row.step_id, detail: JSON.parse(row.detail) as Record<string, unknown>, at: iso(row.created_at) };
}

/** Plans (versioned, validated) and the HTTP-facing side of runs; the engine moves the runs. */
export class CoordinationService {
  /** The read of waiting steps that the events of this turn of the event loop share. */
  private waiterRead: Promise<{ run_id: string; step_id: string; wait_topic: string }[]> | null = null;

  constructor(
    private readonly deps: { store: CoordinationStore; engine: RunEngine; clock: Clock; notifier: Notifier; links: ApprovalLinks; audit: AuditTrail; people: People },
  ) {}

  private get store() {
    return this.deps.store;
  }

  private async validate(input: PlanInput, tx: Tx): Promise<PlanDefinition> {
    const definition: PlanDefinition = {
      ...(input.description !== undefined && { description: input.description }),
      steps: withStepDefaults(input.steps, input.alias),
      ...(input.output !== undefined && { output: input.output }),
    };
    const problems = validatePlan(definition);
    for (const [i, step] of input.steps.entries()) {
      for (const [at, planId] of [
        [`steps[${i}].plan_id`, kindOf(step).planOf?.(step)],
        [`steps[${i}].step.plan_id`, step.step && kindOf(step.step).planOf?.(step.step)],
      ] as const) {
        if (planId !== undefined && !(await this.store.findPlan(tx, planId))) problems.push({ field: at, message: `unknown plan '${planId}'` });
      }
    }
    if (problems.length > 0) throw new InvalidRequest(`The plan is invalid: ${problems[0]!.field}: ${problems[0]!.message}`, problems);
    return definition;
  }

  private versionRow(planId: string, version: number, alias: string, definition: PlanDefinition, by: string, now: number): PlanVersionRow {
    return { plan_id: planId, version, alias, definition: JSON.stringify(definition), created_by: by, created_at: now };
  }

  private async aliasTaken<T>(work: () => Promise<T>, alias: string): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (this.store.isUniqueViolation(err)) throw new Conflict(`A plan with alias '${alias}' already exists`);
      throw err;
    }
  }

  async createPlan(input: PlanInput, caller: Caller): Promise<Plan> {
    const now = this.deps.clock.now();
    return this.aliasTaken(
      () =>
        this.store.inTransaction(async (tx) => {
          const definition = await this.validate(input, tx);
          const plan: PlanRow = { id: newId('plan', now), alias: input.alias, version: 1, created_by: caller.actor, created_at: now, updated_at: now };
          await this.deps.audit.record(tx, { action: 'plan.create', resource: { type: 'plan', id: plan.id } });
          const version = this.versionRow(plan.id, 1, input.alias, definition, caller.actor, now);
          await this.store.insertPlan(tx, plan, version);
          return toPlan(plan, version, now);
        }),
      input.alias,
    );
  }

  private async planRow(tx: Tx, idOrAlias: string, options: { lock?: boolean } = {}): Promise<PlanRow> {
    const plan = await this.store.findPlan(tx, idOrAlias, options);
    if (!plan) throw new NotFound('Plan', idOrAlias);
    return plan;
  }

  /** The plan `caller` is about to change, locked: 404 unknown, 403 when it may not change it. */
  private async changeablePlan(tx: Tx, idOrAlias: string, caller: Caller): Promise<PlanRow> {
    const plan = await this.planRow(tx, idOrAlias, { lock: true });
    assertMayChange(caller, { type: 'plan', id: plan.id, createdBy: plan.created_by });
    return plan;
  }

  async getPlan(idOrAlias: string): Promise<Plan> {
    const plan = await this.planRow(autocommit, idOrAlias);
    return toPlan(plan, (await this.store.findVersion(autocommit, plan.id, plan.version))!, plan.updated_at);
  }

  async getPlanVersion(idOrAlias: string, version: number): Promise<Plan> {
    const plan = await this.planRow(autocommit, idOrAlias);
    const row = await this.store.findVersion(autocommit, plan.id, version);
    if (!row) throw new NotFound('Plan version', `${plan.id}@${version}`);
    return toPlan(plan, row, row.created_at);
  }

  async listPlans(window: Page): Promise<Paged<Plan>> {
    const page = await this.store.listPlans(autocommit, window);
    const items = await Promise.all(
      page.items.map(async (plan) => toPlan(plan, (await this.store.findVersion(autocommit, plan.id, plan.version))!, plan.updated_at)),
    );
    return { items, total: page.total };
  }

  /** Replaces a plan: a new version; runs already started keep the version they pinned. */
  async updatePlan(idOrAlias: string, input: PlanInput, caller: Caller): Promise<Plan> {
    const now = this.deps.clock.now();
    return this.aliasTaken(
      () =>
        this.store.inTransaction(async (tx) => {
          const plan = await this.changeablePlan(tx, idOrAlias, caller);
          await this.deps.audit.record(tx, { action: 'plan.update', resource: { type: 'plan', id: plan.id } });
          const definition = await this.validate(input, tx);
          const next = plan.version + 1;
          const version = this.versionRow(plan.id, next, input.alias, definition, caller.actor, now);
          await this.store.updatePlan(tx, plan.id, { alias: input.alias, version: next, updated_at: now }, version);
          return toPlan(plan, version, now);
        }),
      input.alias,
    ).then(async (updated) => {
      // Event triggers cache the current version of their plans on every node.
      await this.deps.notifier.notify(COORDINATION_CHANGED);
      return updated;
    });
  }

  /** Deletes a plan with its versions and triggers (runs keep their copy of the definition). */
  async deletePlan(idOrAlias: string, caller: Caller): Promise<string> {
    const id = await this.store.inTransaction(async (tx) => {
      const plan = await this.changeablePlan(tx, idOrAlias, caller);
      await this.deps.audit.record(tx, { action: 'plan.delete', resource: { type: 'plan', id: plan.id } });
      await this.store.deletePlan(tx, plan.id);
      return plan.id;
    });
    // Every node drops its cached event triggers.
    await this.deps.notifier.notify(COORDINATION_CHANGED);
    return id;
  }

  // Runs

  private async view(tx: Tx, runId: string): Promise<Run> {
    const run = await this.store.findRun(tx, runId);
    if (!run) throw new NotFound('Run', runId);
    const tags = await this.store.tagsOfRuns(tx, [runId]);
    return toRun(run, await this.store.runSteps(tx, runId), tags.get(runId)!);
  }

  async startRun(input: { plan_id: string; input?: Record<string, unknown>; adaptive?: Adaptive; tags?: string[] }, caller: Caller): Promise<Run> {
    return this.store.inTransaction(async (tx) => {
      const plan = await this.store.currentPlan(tx, input.plan_id);
      if (!plan) throw new NotFound('Plan', input.plan_id);
      const run = await this.deps.engine.start(tx, {
        planId: plan.id,
        planAlias: plan.alias,
        planVersion: plan.version,
        definition: plan.definition,
        definitionText: plan.text,
        input: input.input ?? {},
        adaptive: input.adaptive,
        createdBy: caller.agentId ?? caller.actor,
      });
      const tags = [...new Set(input.tags ?? [])].sort();
      await this.store.insertRunTags(tx, run.id, tags);
      await this.deps.audit.record(tx, { action: 'run.start', resource: { type: 'run', id: run.id } });
      // The run as saved, with its steps from memory: no need to read back what was just written.
      return toRun(run, await this.deps.engine.stepsOf(tx, run), tags);
    });
  }

  getRun(runId: string): Promise<Run> {
    return this.view(autocommit, runId);
  }

  async listRuns(filter: RunListQuery, window: Page): Promise<Paged<Run>> {
    let planId = filter.plan_id;
    if (planId !== undefined) planId = (await this.store.findPlan(autocommit, planId))?.id ?? planId;
    const ms = (time: string | undefined) => (time === undefined ? undefined : Date.parse(time));
    const page = await this.store.listRuns(
      autocommit,
      { planId, status: filter.status, startedAfter: ms(filter.started_after), startedBefore: ms(filter.started_before), tag: filter.tag },
      window,
    );
    const ids = page.items.map((run) => run.id);
    const [steps, tags] = [await this.store.stepsOfRuns(autocommit, ids), await this.store.tagsOfRuns(autocommit, ids)];
    const items = page.items.map((run) => toRun(run, steps.get(run.id)!, tags.get(run.id)!));
    return { items, total: page.total };
  }

  /** 404 unknown; 403 unless `caller` started the run (its parent run, for a sub-plan's) or acts for the platform. */
  private async assertMayChangeRun(tx: Tx, runId: string, caller: Caller): Promise<void> {
    const run = await this.store.findRun(tx, runId);
    if (!run) throw new NotFound('Run', runId);
    assertMayChange(caller, { type: 'run', id: runId, createdBy: run.created_by });
  }

  async cancelRun(runId: string, caller: Caller, reason?: string): Promise<Run> {
    return this.store.inTransaction(async (tx) => {
      await this.assertMayChangeRun(tx, runId, caller);
      await this.deps.audit.record(tx, { action: 'run.cancel', resource: { type: 'run', id: runId } });
      await this.deps.engine.cancel(tx, runId, `cancelled by ${caller.agentId ?? caller.actor}`, { by: { actor: caller.actor, reason } });
      return this.view(tx, runId);
    });
  }

  async approve(runId: string, stepId: string, decision: { approved: boolean; comment?: string; reason?: string }, caller: Caller): Promise<Run> {
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: decision.approved ? 'step.approve' : 'step.reject', resource: { type: 'step', id: `${runId}/${stepId}` } });
      const { approved, comment = null, reason } = decision;
      await this.deps.engine.decide(tx, runId, stepId, { type: 'human_approval', approved, comment }, caller.decider, { reason });
      return this.view(tx, runId);
    });
  }

  async submitInput(runId: string, stepId: string, data: Record<string, unknown>, caller: Caller, reason?: string): Promise<Run> {
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'step.submit_input', resource: { type: 'step', id: `${runId}/${stepId}` } });
      await this.deps.engine.decide(tx, runId, stepId, { type: 'human_input', data }, caller.decider, { reason });
      return this.view(tx, runId);
    });
  }

  /** Every human step waiting for a person, across runs, oldest first (the approvals inbox). */
  async listPendingApprovals(window: Page): Promise<Paged<PendingApproval>> {
    const page = await this.store.listWaitingHumanSteps(autocommit, window);
    return { items: page.items.map(toPendingApproval), total: page.total };
  }

  /**
   * The oldest human_input step waiting for data (of one run, and one step of it, when given),
   * or null: what an MCP client asks its user for (mcp/human-input.ts).
   */
  async oldestWaitingInput(of: { runId?: string; stepId?: string } = {}): Promise<PendingApproval | null> {
    const window = { limit: WAITING_INPUT_BATCH, offset: 0 };
    for (;;) {
      const page = await this.store.listWaitingHumanSteps(autocommit, window, of);
      const input = page.items.map(toPendingApproval).find((step) => step.type === 'human_input');
      if (input) return input;
      window.offset += window.limit;
      if (window.offset >= page.total) return null;
    }
  }

  /** What an approval link asks, for the page behind it (a GET: it decides nothing). */
  async linkedStep(token: string): Promise<LinkedStep> {
    const claim = await this.deps.links.read(token);
    // A look, not a transition: no transaction, no lock.
    const { ctx, step, def } = await this.deps.engine.linkedStep(claim.runId, claim.stepId, claim);
    const asked = kindOf(def).asked!(step);
    const outputs: Record<string, unknown> = {};
    for (const other of ctx.steps.values()) if (other.row.status === 'completed') outputs[other.row.step_id] = parseNullableJson(other.row.output);
    return {
      run_id: ctx.run.id,
      plan_id: ctx.run.plan_id,
      step_id: step.row.step_id,
      type: def.type as LinkedStep['type'],
      prompt: asked.prompt,
      schema: asked.schema ?? null,
      approver: claim.approver,
      expires_at: iso(claim.expiresAt),
      run_input: ctx.input as Record<string, unknown>,
      outputs,
    };
  }

  /**
   * What can be known of an approval link without its request's body: that this server signed
   * it (else 404), that it has not expired (else 409) and that it decides as someone (else 403).
   * A decision's route checks this before reading the body, so that a bogus token costs no body:
   * 1,000 slow 1 MiB bodies sent with one took RSS from 209 MB to 1,150 MB.
   */
  async checkLink(token: string): Promise<void> {
    const claim = await this.deps.links.read(token);
    if (claim.expiresAt <= this.deps.clock.now()) throw new Conflict(`This link expired at ${iso(claim.expiresAt)}`);
    if (claim.approver === null) throw unaddressedLink(claim);
  }

  /**
   * Decides a human step through its approval link (the token authenticates): once, while the
   * link's attempt of the step waits and before it expires, as the link's approver.
   */
  async decideByLink(token: string, body: { approved: boolean; comment?: string } | { data: Record<string, unknown> }): Promise<LinkDecision> {
    const claim = await this.deps.links.read(token);
    const by = await this.linkDecider(claim);
    return this.store.inTransaction(async (tx) => {
      const action = 'data' in body ? 'step.submit_input' : body.approved ? 'step.approve' : 'step.reject';
      // The link's approver decides, not the anonymous request that carried it.
      const actor = { kind: by.kind, id: by.actor, key_id: null };
      await this.deps.audit.record(tx, { action, resource: { type: 'step', id: `${claim.runId}/${claim.stepId}` }, actor });
      const decision: HumanDecision = 'data' in body ? { type: 'human_input', data: body.data } : { type: 'human_approval', approved: body.approved, comment: body.comment ?? null };
      await this.deps.engine.decide(tx, claim.runId, claim.stepId, decision, by, { claim });
      const step = (await this.store.runSteps(tx, claim.runId)).find((row) => row.step_id === claim.stepId)!;
      return {
        run_id: claim.runId,
        step_id: claim.stepId,
        status: step.status,
        decided_by: by.id,
        decided_by_kind: by.kind as LinkDecision['decided_by_kind'],
        decided_at: iso(step.completed_at ?? this.deps.clock.now()),
      };
    });
  }

  /**
   * Who a link decides as: the agent it was sent to (which the step names), or its user as they
   * are now (a disabled user's links decide nothing, and a user the step does not accept is refused).
   */
  private async linkDecider(claim: ApprovalClaim): Promise<Decider> {
    if (claim.approver === null) throw unaddressedLink(claim);
    const username = approverUser(claim.approver);
    if (username === null) {
      const agent = approverAgent(claim.approver)!;
      return { kind: 'agent', id: agent, actor: agent, agentId: agent, role: null, mayDecide: false, overrides: false };
    }
    const person = await personDecider(this.deps.people, username);
    if (!person) throw new Forbidden(`This link decides as user '${username}', who no longer exists or is disabled`);
    return person;
  }

  /**
   * A link that decides a waiting human step as one person (`user:<username>`), for that person
   * to decide from wherever it is sent (mail, chat). Made by that person or an admin, for someone
   * the step accepts; it expires with the step's wait like the other links.
   */
  async createLink(runId: string, stepId: string, approver: string, caller: Caller): Promise<ApprovalLink> {
    if (caller.decider.actor !== approver && !caller.decider.overrides) {
      throw new Forbidden(`Only ${approver} or an admin may make a link that decides as ${approver}`);
    }
    const username = approverUser(approver)!;
    const person = await personDecider(this.deps.people, username);
    if (!person) throw new Conflict(`User '${username}' does not exist or is disabled`);
    const { ctx, step, def } = await this.deps.engine.linkedStep(runId, stepId);
    const refusal = decisionRefusal(kindOf(def).asked!(step).approvers ?? [], person);
    if (refusal !== null) throw new Conflict(`${refusal} (step '${stepId}'): no link decides as ${approver}`);
    const claim = linkClaim(ctx, step, approver);
    await this.store.inTransaction((tx) => this.deps.audit.record(tx, { action: 'step.link', resource: { type: 'step', id: `${runId}/${stepId}` } }));
    return { run_id: runId, step_id: stepId, approver, approve_url: (await this.deps.links.linker())(claim), expires_at: iso(claim.expiresAt) };
  }

  async redrive(runId: string, caller: Caller, reason?: string): Promise<Run> {
    return this.store.inTransaction(async (tx) => {
      await this.assertMayChangeRun(tx, runId, caller);
      await this.deps.audit.record(tx, { action: 'run.redrive', resource: { type: 'run', id: runId } });
      await this.deps.engine.redrive(tx, runId, { actor: caller.actor, name: caller.agentId ?? caller.actor, reason });
      return this.view(tx, runId);
    });
  }

  async events(runId: string, window: Page): Promise<Paged<RunEvent>> {
    if (!(await this.store.findRun(autocommit, runId))) throw new NotFound('Run', runId);
    const page = await this.store.listEvents(autocommit, runId, window);
    return { items: page.items.map(toEvent), total: page.total };
  }

  // Engine plumbing

  async handleEvent(event: PublishedEvent): Promise<void> {
    // Most events resume nothing: look before opening a transaction.
    const waiters = await this.waiters();
    if (!waiters.some((w) => topicMatches(w.wait_topic, event.topic))) return;
    await this.store.inTransaction((tx) => this.deps.engine.onEvent(tx, event));
  }

  /**
   * The steps waiting for events, read once for all the events handled in one turn of the
   * event loop (a burst of publishes): the read starts after every one of them was published,
   * so it sees every wait that began before any of them.
   */
  private waiters(): Promise<{ run_id: string; step_id: string; wait_topic: string }[]> {
    this.waiterRead ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.waiterRead = null;
      return this.store.eventWaiters(autocommit);
    });
    return this.waiterRead;
  }

  /** Advances runs whose timers are due; returns how many it advanced. */
  async wakeDue(batch = 100): Promise<number> {
    let advanced = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const count = await this.store.inTransaction(async (tx) => {
        const due = await this.store.claimDueRuns(tx, now, batch);
        for (const run of due) await this.deps.engine.wake(tx, run);
        return due.length;
      });
      advanced += count;
      if (count < batch) return advanced;
    }
  }

  nextWakeAt(): Promise<number | null> {
    return this.store.nextWakeAt(autocommit);
  }
}
