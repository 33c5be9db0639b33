import { assertMayChange } from '../auth/ownership.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { Notifier } from '../kernel/notifier.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { AuditTrail } from '../kernel/ports.js';
import type { AgentPauses, BudgetPause, PausedScopes } from '../kernel/usage-ports.js';
import type { Caller } from './caller.js';
import { COORDINATION_CHANGED } from './engine.js';
import type { ConcurrencyLimit, PlanDefinition, RateLimit, StepDefinition } from './plan-definition.js';
import type { PlanRow, PlanStore, PlanVersionRow } from './plan-store.js';
import { validatePlan, withStepDefaults } from './plan.js';
import { kindOf } from './steps/index.js';

export interface Plan {
  id: string;
  alias: string;
  description: string | null;
  steps: StepDefinition[];
  output: Record<string, unknown> | null;
  retention_days: number | null;
  concurrency?: ConcurrencyLimit;
  rate_limit?: RateLimit;
  priority?: number;
  version: number;
  paused: BudgetPause | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface PlanInput {
  alias: string;
  description?: string;
  steps: StepDefinition[];
  output?: Record<string, unknown>;
  retention_days?: number;
  concurrency?: ConcurrencyLimit;
  rate_limit?: RateLimit;
  priority?: number;
}

/** The run limits a plan declares (those it leaves out stay out). */
function limitsOf({ concurrency, rate_limit, priority }: Pick<PlanDefinition, 'concurrency' | 'rate_limit' | 'priority'>) {
  return {
    ...(concurrency !== undefined && { concurrency }),
    ...(rate_limit !== undefined && { rate_limit }),
    ...(priority !== undefined && { priority }),
  };
}

/** `created_by` is the plan's creator, who owns every version (auth/ownership.ts), not the version's author. */
function toPlan(
  plan: Pick<PlanRow, 'id' | 'created_by' | 'created_at'>,
  version: PlanVersionRow,
  updatedAt: number,
  pauses: PausedScopes,
): Plan {
  const definition = JSON.parse(version.definition) as PlanDefinition;
  return {
    id: plan.id,
    alias: version.alias,
    description: definition.description ?? null,
    steps: definition.steps,
    output: definition.output ?? null,
    retention_days: definition.retention_days ?? null,
    ...limitsOf(definition),
    version: version.version,
    paused: pauses.pauseOf('plan', plan.id),
    created_by: plan.created_by,
    created_at: iso(plan.created_at),
    updated_at: iso(updatedAt),
  };
}

/** Plans: versioned, validated when saved (a new version per change); runs pin the version they start with. */
export class PlanService {
  constructor(private readonly deps: { plans: PlanStore; clock: Clock; notifier: Notifier; audit: AuditTrail; pauses: AgentPauses }) {}

  private async validate(input: PlanInput, tx: Tx): Promise<PlanDefinition> {
    const definition: PlanDefinition = {
      ...(input.description !== undefined && { description: input.description }),
      steps: withStepDefaults(input.steps, input.alias),
      ...(input.output !== undefined && { output: input.output }),
      ...(input.retention_days !== undefined && { retention_days: input.retention_days }),
      ...limitsOf(input),
    };
    const problems = validatePlan(definition);
    for (const [i, step] of input.steps.entries()) {
      for (const [at, planId] of [
        [`steps[${i}].plan_id`, kindOf(step).planOf?.(step)],
        [`steps[${i}].step.plan_id`, step.step && kindOf(step.step).planOf?.(step.step)],
      ] as const) {
        if (planId !== undefined && !(await this.deps.plans.findPlan(tx, planId)))
          problems.push({ field: at, message: `unknown plan '${planId}'` });
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
      if (this.deps.plans.isUniqueViolation(err)) throw new Conflict(`A plan with alias '${alias}' already exists`);
      throw err;
    }
  }

  async createPlan(input: PlanInput, caller: Caller): Promise<Plan> {
    const now = this.deps.clock.now();
    return this.aliasTaken(
      () =>
        this.deps.plans.inTransaction(async (tx) => {
          const definition = await this.validate(input, tx);
          const plan: PlanRow = {
            id: newId('plan', now),
            alias: input.alias,
            version: 1,
            created_by: caller.actor,
            created_at: now,
            updated_at: now,
          };
          await this.deps.audit.record(tx, { action: 'plan.create', resource: { type: 'plan', id: plan.id } });
          const version = this.versionRow(plan.id, 1, input.alias, definition, caller.actor, now);
          await this.deps.plans.insertPlan(tx, plan, version);
          return toPlan(plan, version, now, await this.deps.pauses.pauses(tx));
        }),
      input.alias,
    );
  }

  private async planRow(tx: Tx, idOrAlias: string, options: { lock?: boolean } = {}): Promise<PlanRow> {
    const plan = await this.deps.plans.findPlan(tx, idOrAlias, options);
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
    const version = (await this.deps.plans.findVersion(autocommit, plan.id, plan.version))!;
    return toPlan(plan, version, plan.updated_at, await this.deps.pauses.pauses(autocommit));
  }

  async getPlanVersion(idOrAlias: string, version: number): Promise<Plan> {
    const plan = await this.planRow(autocommit, idOrAlias);
    const row = await this.deps.plans.findVersion(autocommit, plan.id, version);
    if (!row) throw new NotFound('Plan version', `${plan.id}@${version}`);
    return toPlan(plan, row, row.created_at, await this.deps.pauses.pauses(autocommit));
  }

  /** The page's pauses come from one read of what budgets pause (a snapshot most of the time), not one per plan. */
  async listPlans(window: Page): Promise<Paged<Plan>> {
    const page = await this.deps.plans.listPlans(autocommit, window);
    const pauses = await this.deps.pauses.pauses(autocommit);
    const items = await Promise.all(
      page.items.map(async (plan) =>
        toPlan(plan, (await this.deps.plans.findVersion(autocommit, plan.id, plan.version))!, plan.updated_at, pauses),
      ),
    );
    return { ...page, items };
  }

  /** Replaces a plan: a new version; runs already started keep the version they pinned. */
  async updatePlan(idOrAlias: string, input: PlanInput, caller: Caller): Promise<Plan> {
    const now = this.deps.clock.now();
    return this.aliasTaken(
      () =>
        this.deps.plans.inTransaction(async (tx) => {
          const plan = await this.changeablePlan(tx, idOrAlias, caller);
          await this.deps.audit.record(tx, { action: 'plan.update', resource: { type: 'plan', id: plan.id } });
          const definition = await this.validate(input, tx);
          const next = plan.version + 1;
          const version = this.versionRow(plan.id, next, input.alias, definition, caller.actor, now);
          await this.deps.plans.updatePlan(tx, plan.id, { alias: input.alias, version: next, updated_at: now }, version);
          return toPlan(plan, version, now, await this.deps.pauses.pauses(tx));
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
    const id = await this.deps.plans.inTransaction(async (tx) => {
      const plan = await this.changeablePlan(tx, idOrAlias, caller);
      await this.deps.audit.record(tx, { action: 'plan.delete', resource: { type: 'plan', id: plan.id } });
      await this.deps.plans.deletePlan(tx, plan.id);
      return plan.id;
    });
    // Every node drops its cached event triggers.
    await this.deps.notifier.notify(COORDINATION_CHANGED);
    return id;
  }
}
