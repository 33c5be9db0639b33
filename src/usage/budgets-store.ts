import type { Selectable, Updateable } from 'kysely';
import { Store } from '../db/store.js';
import { dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { Tx } from '../kernel/tx.js';
import type { PauseScopeKind } from '../kernel/usage-ports.js';
import type { BudgetsTable } from './tables.js';

export type BudgetRow = Selectable<BudgetsTable>;

/** The scopes a usage record counts against. */
export interface ScopeKeys {
  agent_id: string;
  capability: string | null;
  plan_id: string | null;
}

/** The scopes some budget has, by kind. */
export interface BudgetScopes {
  global: boolean;
  agent: Set<string>;
  capability: Set<string>;
  plan: Set<string>;
}

/** Until when budgets pause scopes and which budget does, by kind and scope value (the global kind's value is ''). */
export type PausedUntil = Record<PauseScopeKind, Map<string, { until: number; budget_id: string }>>;

/** Budgets: their definitions and their current period's consumption. */
export class BudgetsStore extends Store {
  async insert(tx: Tx, row: BudgetRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('budgets').values(row).execute();
  }

  async find(tx: Tx, id: string): Promise<BudgetRow | undefined> {
    return dbOf(tx, this.db).selectFrom('budgets').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The budget, its row locked until `tx` ends (PostgreSQL), so its consumption moves one writer at a time. */
  async lock(tx: Tx, id: string): Promise<BudgetRow | undefined> {
    return this.caps.lock(dbOf(tx, this.db).selectFrom('budgets').selectAll().where('id', '=', id)).executeTakeFirst();
  }

  async count(tx: Tx): Promise<number> {
    const row = await dbOf(tx, this.db)
      .selectFrom('budgets')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Every budget (at most MAX_BUDGETS). */
  async all(tx: Tx): Promise<BudgetRow[]> {
    return dbOf(tx, this.db).selectFrom('budgets').selectAll().orderBy('id').execute();
  }

  /** `pausedAfter`: only the budgets pausing their scope past that time (a pause ends with its period). */
  async list(tx: Tx, window: Page, pausedAfter: number | null): Promise<Paged<BudgetRow>> {
    let query = dbOf(tx, this.db).selectFrom('budgets').selectAll().orderBy('id');
    if (pausedAfter !== null) query = query.where('paused_until', '>', pausedAfter);
    return this.paginate(tx, query, window);
  }

  /** The scopes budgets have (at most MAX_BUDGETS rows, on the scope index). */
  async scopes(tx: Tx): Promise<BudgetScopes> {
    const rows = await dbOf(tx, this.db).selectFrom('budgets').select(['scope_kind', 'scope_value']).distinct().execute();
    const scopes: BudgetScopes = { global: false, agent: new Set(), capability: new Set(), plan: new Set() };
    for (const { scope_kind, scope_value } of rows) {
      if (scope_kind === 'global') scopes.global = true;
      else scopes[scope_kind as 'agent' | 'capability' | 'plan'].add(scope_value);
    }
    return scopes;
  }

  /** Every budget records of these keys count against, locked (in id order, so concurrent acks do not deadlock). */
  async lockMatching(tx: Tx, keys: readonly ScopeKeys[]): Promise<BudgetRow[]> {
    const values = (pick: (k: ScopeKeys) => string | null) => [...new Set(keys.flatMap((k) => pick(k) ?? []))];
    const [agents, capabilities, plans] = [values((k) => k.agent_id), values((k) => k.capability), values((k) => k.plan_id)];
    const query = dbOf(tx, this.db)
      .selectFrom('budgets')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb('scope_kind', '=', 'global'),
          ...(
            [
              ['agent', agents],
              ['capability', capabilities],
              ['plan', plans],
            ] as const
          )
            .filter(([, list]) => list.length > 0)
            .map(([kind, list]) => eb.and([eb('scope_kind', '=', kind), eb('scope_value', 'in', list)])),
        ]),
      )
      .orderBy('id');
    return this.caps.lock(query).execute();
  }

  async update(tx: Tx, id: string, changes: Updateable<BudgetsTable>): Promise<void> {
    await dbOf(tx, this.db).updateTable('budgets').set(changes).where('id', '=', id).execute();
  }

  async delete(tx: Tx, id: string): Promise<BudgetRow | undefined> {
    return dbOf(tx, this.db).deleteFrom('budgets').where('id', '=', id).returningAll().executeTakeFirst();
  }

  /** The scopes budgets pause past `now`, by kind, each with its longest pause and the budget that makes it. */
  async pausedScopes(tx: Tx, now: number): Promise<PausedUntil> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('budgets')
      .select(['id', 'scope_kind', 'scope_value', 'paused_until'])
      .where('paused_until', '>', now)
      .orderBy('id')
      .execute();
    const paused: PausedUntil = { global: new Map(), agent: new Map(), capability: new Map(), plan: new Map() };
    for (const row of rows) {
      const byValue = paused[row.scope_kind as PauseScopeKind];
      const until = Number(row.paused_until);
      if (until > (byValue.get(row.scope_value)?.until ?? 0)) byValue.set(row.scope_value, { until, budget_id: row.id });
    }
    return paused;
  }
}
