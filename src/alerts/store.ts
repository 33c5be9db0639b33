import type { Selectable, Updateable } from 'kysely';
import { Store } from '../db/store.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { AlertRulesTable, AlertsTable } from './tables.js';

export type RuleRow = Selectable<AlertRulesTable>;
export type AlertRow = Selectable<AlertsTable>;
export type AlertWithRule = AlertRow & { rule_name: string };

/** Alert rules and their alerts. What the conditions read lives in signals-store.ts. */
export class AlertsStore extends Store {
  async insertRule(tx: Tx, row: RuleRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('alert_rules').values(row).execute();
  }

  async findRule(tx: Tx, id: string): Promise<RuleRow | undefined> {
    return dbOf(tx, this.db).selectFrom('alert_rules').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The rule, its row locked until `tx` ends (PostgreSQL), so changes to it are serialized. */
  async lockRule(tx: Tx, id: string): Promise<RuleRow | undefined> {
    return this.caps.lock(dbOf(tx, this.db).selectFrom('alert_rules').selectAll().where('id', '=', id)).executeTakeFirst();
  }

  async countRules(tx: Tx): Promise<number> {
    const row = await dbOf(tx, this.db)
      .selectFrom('alert_rules')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async listRules(tx: Tx, window: Page): Promise<Paged<RuleRow>> {
    return this.paginate(tx, dbOf(tx, this.db).selectFrom('alert_rules').selectAll().orderBy('id'), window);
  }

  /** The rules evaluated each pass: the enabled ones. */
  async enabledRules(tx: Tx): Promise<RuleRow[]> {
    return dbOf(tx, this.db).selectFrom('alert_rules').selectAll().where('enabled', '=', 1).orderBy('id').execute();
  }

  async findRules(tx: Tx, ids: readonly string[]): Promise<Map<string, RuleRow>> {
    if (ids.length === 0) return new Map();
    const rows = await dbOf(tx, this.db).selectFrom('alert_rules').selectAll().where(this.caps.inTextList('id', ids)).execute();
    return new Map(rows.map((row) => [row.id, row]));
  }

  async updateRule(tx: Tx, id: string, changes: Updateable<AlertRulesTable>): Promise<void> {
    await dbOf(tx, this.db).updateTable('alert_rules').set(changes).where('id', '=', id).execute();
  }

  /** Deletes the rule and its alerts. */
  async deleteRule(tx: Tx, id: string): Promise<boolean> {
    const db = dbOf(tx, this.db);
    await db.deleteFrom('alerts').where('rule_id', '=', id).execute();
    const result = await db.deleteFrom('alert_rules').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /** Serializes evaluation passes that write (nodes overlapping while leadership moves) until `tx` ends. */
  async lockEvaluation(tx: Tx): Promise<void> {
    await this.caps.transactionLock(dbOf(tx, this.db), 'alerts:evaluate');
  }

  /** Every firing alert (at most one per rule), locked to `tx` on PostgreSQL when it is a transaction. */
  async firingAlerts(tx: Tx, lock = false): Promise<AlertRow[]> {
    const query = dbOf(tx, this.db).selectFrom('alerts').selectAll().where('state', '=', 'firing');
    return (lock ? this.caps.lock(query) : query).execute();
  }

  /** Firing alerts by rule and severity, for the gauge. */
  async firingCounts(tx: Tx): Promise<{ rule_id: string; severity: string; n: number }[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('alerts')
      .where('state', '=', 'firing')
      .select((eb) => ['rule_id', 'severity', eb.fn.countAll<number | string>().as('n')])
      .groupBy(['rule_id', 'severity'])
      .execute();
    return rows.map((row) => ({ rule_id: row.rule_id, severity: row.severity, n: Number(row.n) }));
  }

  async insertAlert(tx: Tx, row: AlertRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('alerts').values(row).execute();
  }

  async updateAlert(tx: Tx, id: string, changes: Updateable<AlertsTable>): Promise<void> {
    await dbOf(tx, this.db).updateTable('alerts').set(changes).where('id', '=', id).execute();
  }

  async findAlert(tx: Tx, id: string): Promise<AlertWithRule | undefined> {
    return this.withRule(tx).where('a.id', '=', id).executeTakeFirst();
  }

  /** Newest first. `since`: fired at or after it. */
  async listAlerts(tx: Tx, filter: { state?: string; ruleId?: string; since?: number }, window: Page): Promise<Paged<AlertWithRule>> {
    let query = this.withRule(tx).orderBy('a.id', 'desc');
    if (filter.state !== undefined) query = query.where('a.state', '=', filter.state);
    if (filter.ruleId !== undefined) query = query.where('a.rule_id', '=', filter.ruleId);
    if (filter.since !== undefined) query = query.where('a.fired_at', '>=', filter.since);
    return this.paginate(tx, query, window);
  }

  private withRule(tx: Tx) {
    return dbOf(tx, this.db)
      .selectFrom('alerts as a')
      .innerJoin('alert_rules as r', 'r.id', 'a.rule_id')
      .selectAll('a')
      .select('r.name as rule_name');
  }
}
