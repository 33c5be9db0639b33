import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden } from '../kernel/errors.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import { autocommit } from '../kernel/tx.js';
import { parseNullableJson } from '../kernel/json.js';
import type { AuditTrail } from '../kernel/ports.js';
import type { ApprovalClaim, ApprovalLinks } from './approval-links.js';
import { approverAgent, approverUser, decisionRefusal, personDecider, type Decider, type People } from './approvers.js';
import type { Caller } from './caller.js';
import type { RunEngine } from './engine.js';
import { linkClaim } from './run-events.js';
import { runView, type Run } from './run-service.js';
import type { StepRefs } from './step-refs.js';
import type { PendingHumanStepRow } from './run-list-store.js';
import type { RunStore } from './run-store.js';
import type { ApprovalLink, LinkDecision, LinkedStep, PendingApproval } from './schemas.js';
import { kindOf, type HumanDecision } from './steps/index.js';

/** The event's link is seen by every reader of the event log: it points at the step, and a signed-in person decides. */
function unaddressedLink(claim: ApprovalClaim): Forbidden {
  return new Forbidden(
    `This link shows the step but decides nothing by itself (everyone who reads the event log has it): sign in to the console to decide, or POST /api/v1/coordination/runs/${claim.runId}/steps/${claim.stepId}/approve with 'approvals:decide'`,
  );
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

/**
 * People's (and named agents') decisions of human steps: approvals and inputs, the approvals
 * inbox, and approval links (what one shows, deciding through one, making one for a person).
 */
export class HumanDecisionService {
  constructor(
    private readonly deps: {
      runs: RunStore;
      engine: RunEngine;
      clock: Clock;
      links: ApprovalLinks;
      audit: AuditTrail;
      people: People;
      refs: StepRefs;
    },
  ) {}

  async approve(
    runId: string,
    stepId: string,
    decision: { approved: boolean; comment?: string; reason?: string },
    caller: Caller,
  ): Promise<Run> {
    return this.deps.runs.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, {
        action: decision.approved ? 'step.approve' : 'step.reject',
        resource: { type: 'step', id: `${runId}/${stepId}` },
      });
      const { approved, comment = null, reason } = decision;
      await this.deps.engine.decide(tx, runId, stepId, { type: 'human_approval', approved, comment }, caller.decider, { reason });
      return runView(this.deps.runs, this.deps.refs, tx, runId);
    });
  }

  async submitInput(runId: string, stepId: string, data: Record<string, unknown>, caller: Caller, reason?: string): Promise<Run> {
    return this.deps.runs.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'step.submit_input', resource: { type: 'step', id: `${runId}/${stepId}` } });
      await this.deps.engine.decide(tx, runId, stepId, { type: 'human_input', data }, caller.decider, { reason });
      return runView(this.deps.runs, this.deps.refs, tx, runId);
    });
  }

  /** Every human step waiting for a person, across runs, oldest first (the approvals inbox). */
  async listPendingApprovals(window: Page): Promise<Paged<PendingApproval>> {
    const page = await this.deps.runs.listWaitingHumanSteps(autocommit, window);
    return mapPage(page, toPendingApproval);
  }

  /**
   * The oldest human_input step waiting for data (of one run, and one step of it, when given),
   * or null: what an MCP client asks its user for (mcp/human-input.ts).
   */
  async oldestWaitingInput(of: { runId?: string; stepId?: string } = {}): Promise<PendingApproval | null> {
    const window = { limit: WAITING_INPUT_BATCH, offset: 0 };
    for (;;) {
      const page = await this.deps.runs.listWaitingHumanSteps(autocommit, window, of);
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
    for (const other of ctx.steps.values())
      if (other.row.status === 'completed') outputs[other.row.step_id] = parseNullableJson(other.row.output);
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
  async decideByLink(
    token: string,
    body: { approved: boolean; comment?: string } | { data: Record<string, unknown> },
  ): Promise<LinkDecision> {
    const claim = await this.deps.links.read(token);
    const by = await this.linkDecider(claim);
    return this.deps.runs.inTransaction(async (tx) => {
      const action = 'data' in body ? 'step.submit_input' : body.approved ? 'step.approve' : 'step.reject';
      // The link's approver decides, not the anonymous request that carried it.
      const actor = { kind: by.kind, id: by.actor, key_id: null };
      await this.deps.audit.record(tx, { action, resource: { type: 'step', id: `${claim.runId}/${claim.stepId}` }, actor });
      const decision: HumanDecision =
        'data' in body
          ? { type: 'human_input', data: body.data }
          : { type: 'human_approval', approved: body.approved, comment: body.comment ?? null };
      await this.deps.engine.decide(tx, claim.runId, claim.stepId, decision, by, { claim });
      const step = (await this.deps.runs.runSteps(tx, claim.runId)).find((row) => row.step_id === claim.stepId)!;
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
    await this.deps.runs.inTransaction((tx) =>
      this.deps.audit.record(tx, { action: 'step.link', resource: { type: 'step', id: `${runId}/${stepId}` } }),
    );
    return {
      run_id: runId,
      step_id: stepId,
      approver,
      approve_url: (await this.deps.links.linker())(claim),
      expires_at: iso(claim.expiresAt),
    };
  }
}
