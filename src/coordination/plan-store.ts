import type { Selectable } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import { Statements } from '../db/statements.js';
import type { Tx } from '../kernel/tx.js';
import { atomically, dbOf } from '../db/tx.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { CoordinationStore } from './coordination-store.js';
import type { PlanDefinition } from './plan-definition.js';
import type { PlansTable, PlanVersionsTable } from './tables.js';

export type PlanRow = Selectable<PlansTable>;
export type PlanVersionRow = Selectable<PlanVersionsTable>;

/** The newest version of a plan, as a new run pins it: its definition parsed and as stored (the text a run copies). */
export interface CurrentPlan {
  id: string;
  alias: string;
  version: number;
  definition: PlanDefinition;
  text: string;
}

/** Plans and their versions (the only SQL of the plans and plan_versions tables). */
export class PlanStore extends CoordinationStore {
  private readonly definitions = new BoundedMap<string, { definition: PlanDefinition; text: string }>(500);
  /** The plan lookup every run start and trigger fire makes, compiled once. */
  private readonly statements: Statements;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.statements = new Statements(db, { size: 16 });
  }

  async insertPlan(tx: Tx, plan: PlanRow, version: PlanVersionRow): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      await trx.insertInto('plans').values(plan).execute();
      await trx.insertInto('plan_versions').values(version).execute();
    });
  }

  async updatePlan(tx: Tx, id: string, changes: Pick<PlanRow, 'alias' | 'version' | 'updated_at'>, version: PlanVersionRow): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      await trx.updateTable('plans').set(changes).where('id', '=', id).execute();
      await trx.insertInto('plan_versions').values(version).execute();
    });
  }

  /** A plan by id or alias; with `lock`, locked on PostgreSQL until `tx` ends (read for an update). */
  async findPlan(tx: Tx, idOrAlias: string, options: { lock?: boolean } = {}): Promise<PlanRow | undefined> {
    const lock = options.lock === true;
    const query = this.statements.compiled(`plan:${lock}`, { idOrAlias }, (v) =>
      this.lockIf(
        options,
        this.db
          .selectFrom('plans')
          .selectAll()
          .where((eb) => eb.or([eb('id', '=', v.idOrAlias), eb('alias', '=', v.idOrAlias)])),
      ),
    );
    return (await dbOf(tx, this.db).executeQuery(query)).rows[0];
  }

  async findVersion(tx: Tx, planId: string, version: number): Promise<PlanVersionRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('plan_versions')
      .selectAll()
      .where('plan_id', '=', planId)
      .where('version', '=', version)
      .executeTakeFirst();
  }

  /**
   * The newest version of a plan by id or alias (what a new run pins), with its definition
   * parsed and as stored (the text a run copies).
   */
  async currentPlan(tx: Tx, idOrAlias: string): Promise<CurrentPlan | null> {
    const plan = await this.findPlan(tx, idOrAlias);
    if (!plan) return null;
    // A version never changes once written, so its parsed definition can be kept.
    const key = `${plan.id}@${plan.version}`;
    let kept = this.definitions.get(key);
    if (!kept) {
      const text = (await this.findVersion(tx, plan.id, plan.version))!.definition;
      kept = { definition: JSON.parse(text) as PlanDefinition, text };
      this.definitions.set(key, kept);
    }
    return { id: plan.id, alias: plan.alias, version: plan.version, ...kept };
  }

  async listPlans(tx: Tx, window: Page): Promise<Paged<PlanRow>> {
    return this.paginate(tx, dbOf(tx, this.db).selectFrom('plans').selectAll().orderBy('id'), window);
  }

  async deletePlan(tx: Tx, id: string): Promise<void> {
    await atomically(tx, this.db, async (trx) => {
      const triggers = trx.selectFrom('plan_triggers').select('id').where('plan_id', '=', id);
      await trx.deleteFrom('trigger_fires').where('trigger_id', 'in', triggers).execute();
      await trx.deleteFrom('plan_triggers').where('plan_id', '=', id).execute();
      await trx.deleteFrom('plan_versions').where('plan_id', '=', id).execute();
      await trx.deleteFrom('plans').where('id', '=', id).execute();
    });
  }
}
