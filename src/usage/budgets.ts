import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { Notifier } from '../kernel/notifier.js';
import { SYSTEM_ACTOR, type AuditTrail, type EventLog, type InboxWaker } from '../kernel/ports.js';
import { type AgentPauses, type BudgetPause, type BudgetReadings, type PausedScopes, type PauseScopeKind } from '../kernel/usage-ports.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import type { BudgetRow, BudgetScopes, BudgetsStore, PausedUntil, ScopeKeys } from './budgets-store.js';
import { NoticedSnapshot } from './noticed-snapshot.js';
import { isTimeZone, NEVER, periodAt, type Period } from './periods.js';
import type { Budget, CreateBudgetBody, ScopePause, UpdateBudgetBody } from './schemas.js';

/** Budgets at most: each ack with usage looks up the ones it counts against. */
export const MAX_BUDGETS = 10_000;

export interface BudgetsDeps {
  store: BudgetsStore;
  clock: Clock;
  events: EventLog;
  audit: AuditTrail;
  inboxes: InboxWaker;
  notifier: Notifier;
  /** The SQLite file's data version (another process wrote to it); null on PostgreSQL. */
  dataVersion: (() => number) | null;
}

/** Told in the transaction that pauses or resumes a scope: every node reads the paused scopes again. */
const PAUSES_CHANGED = 'budgets:pauses';
/** Told in the transaction that creates or deletes a budget: every node reads the scopes with budgets again. */
const SCOPES_CHANGED = 'budgets:scopes';

/** What one usage record adds to a budget. */
interface Spend {
  cost_usd: number;
  tokens: number;
}

/** What a usage record reports it spent. */
interface Spent {
  cost_usd: number;
  input_tokens: number;
  output_tokens: number;
}

/** A pause's end as answers show it: a total budget's has none (it lasts until a resume). */
const untilOf = (until: number) => (until === NEVER ? null : iso(until));

/** The pauses of `until` that have not ended at `now`, as answers show them. */
function pausesAt(until: PausedUntil, now: number): ScopePause[] {
  return (Object.keys(until) as PauseScopeKind[]).flatMap((kind) =>
    [...until[kind]]
      .filter(([, pause]) => pause.until > now)
      .map(([value, pause]) => ({
        scope: { kind, value: kind === 'global' ? null : value },
        budget_id: pause.budget_id,
        until: untilOf(pause.until),
      })),
  );
}

/** The scopes paused at `now`: a global pause pauses every agent. */
function pausedAt(until: PausedUntil, now: number): PausedScopes {
  const pauseOf = (kind: PauseScopeKind, value: string): BudgetPause | null => {
    const pause = until[kind].get(value);
    return pause !== undefined && pause.until > now ? { budget_id: pause.budget_id, until: untilOf(pause.until) } : null;
  };
  const paused = (kind: PauseScopeKind, value: string) => (until[kind].get(value)?.until ?? 0) > now;
  const global = paused('global', '');
  return {
    none: Object.values(until).every((byValue) => [...byValue.values()].every((pause) => pause.until <= now)),
    agent: (agentId) => global || paused('agent', agentId),
    capability: (capability) => paused('capability', capability),
    plan: (planId) => paused('plan', planId),
    pauseOf,
  };
}

/** Whether some budget of `scopes` counts a record of these keys. */
function anyCovers(scopes: BudgetScopes, keys: ScopeKeys): boolean {
  return (
    scopes.global ||
    scopes.agent.has(keys.agent_id) ||
    (keys.capability !== null && scopes.capability.has(keys.capability)) ||
    (keys.plan_id !== null && scopes.plan.has(keys.plan_id))
  );
}

/** Whether a budget counts a record of these keys. */
function covers(row: BudgetRow, keys: ScopeKeys): boolean {
  switch (row.scope_kind) {
    case 'global':
      return true;
    case 'agent':
      return row.scope_value === keys.agent_id;
    case 'capability':
      return row.scope_value === keys.capability;
    default:
      return row.scope_value === keys.plan_id;
  }
}

/** The larger of the budget's two consumptions, as a fraction of its limit (0 without limits). */
function ratioOf(row: Pick<BudgetRow, 'limit_cost_usd' | 'limit_tokens'>, spent: Spend): number {
  const cost = row.limit_cost_usd === null ? 0 : spent.cost_usd / row.limit_cost_usd;
  const tokens = row.limit_tokens === null ? 0 : spent.tokens / row.limit_tokens;
  return Math.max(cost, tokens);
}

/**
 * The row as of `now`: a budget whose period ended counts from zero in the new one, and a pause
 * ends with the period it was exceeded in.
 */
function current(row: BudgetRow, now: number): BudgetRow {
  const { start } = periodAt(row.period as Period, row.time_zone, now);
  if (row.period_start === start) return row;
  return { ...row, period_start: start, spent_cost_usd: 0, spent_tokens: 0, warned: 0, exceeded: 0, paused_until: null };
}

function toBudget(stored: BudgetRow, now: number): Budget {
  const row = current(stored, now);
  const { end } = periodAt(row.period as Period, row.time_zone, now);
  const paused = row.paused_until !== null && row.paused_until > now;
  return {
    id: row.id,
    name: row.name,
    scope: { kind: row.scope_kind as Budget['scope']['kind'], value: row.scope_kind === 'global' ? null : row.scope_value },
    period: row.period,
    time_zone: row.time_zone,
    limits: { cost_usd: row.limit_cost_usd, tokens: row.limit_tokens },
    warn_at: row.warn_at,
    action: row.action,
    period_start: iso(row.period_start),
    period_end: end === NEVER ? null : iso(end),
    spent: { cost_usd: row.spent_cost_usd, tokens: row.spent_tokens },
    state: paused ? 'paused' : row.exceeded ? 'exceeded' : row.warned ? 'warning' : 'ok',
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function scopeOf(body: CreateBudgetBody): { scope_kind: string; scope_value: string } {
  const named = (['agent_id', 'capability', 'plan_id'] as const).filter((field) => body[field] !== undefined);
  if (named.length > 1) throw InvalidRequest.field(named[1]!, `a budget has one scope: name one of agent_id, capability or plan_id`);
  if (body.agent_id !== undefined) return { scope_kind: 'agent', scope_value: body.agent_id };
  if (body.capability !== undefined) return { scope_kind: 'capability', scope_value: body.capability };
  if (body.plan_id !== undefined) return { scope_kind: 'plan', scope_value: body.plan_id };
  return { scope_kind: 'global', scope_value: '' };
}

/**
 * Budgets over usage: each record counts against the budgets of its agent, capability, plan and
 * the global ones, in the record's transaction. Crossing `warn_at` appends `budget.warning`,
 * crossing a limit `budget.exceeded`, and with action `pause` pauses its scope (an agent, a
 * capability, a plan, or every agent) until the period ends, the limit is raised above what it
 * spent, or a resume.
 */
export class BudgetsService implements AgentPauses, BudgetReadings {
  /**
   * Every receive, discovery lookup and agent step asks what is paused: they read this instead
   * of the database. A pause's end in time needs no notice (each entry keeps its end).
   */
  private readonly paused: NoticedSnapshot<PausedUntil>;
  /**
   * Every ack with usage asks which budgets it counts against: one whose records match no scope
   * here (the common case: no budget, or none of theirs) locks and reads no budget.
   */
  private readonly scopes: NoticedSnapshot<BudgetScopes>;

  constructor(private readonly deps: BudgetsDeps) {
    this.paused = new NoticedSnapshot(deps.notifier, PAUSES_CHANGED, deps.dataVersion);
    this.scopes = new NoticedSnapshot(deps.notifier, SCOPES_CHANGED, deps.dataVersion);
  }

  async create(body: CreateBudgetBody, creator: string): Promise<Budget> {
    const scope = scopeOf(body);
    const timeZone = body.time_zone ?? 'UTC';
    if (!isTimeZone(timeZone)) throw InvalidRequest.field('time_zone', `'${timeZone}' is not an IANA time zone (e.g. Europe/Paris)`);
    const now = this.deps.clock.now();
    const row: BudgetRow = {
      id: newId('bdg', now),
      name: body.name ?? `${body.period} budget`,
      ...scope,
      period: body.period,
      time_zone: timeZone,
      limit_cost_usd: body.limits.cost_usd ?? null,
      limit_tokens: body.limits.tokens ?? null,
      warn_at: body.warn_at ?? null,
      action: body.action,
      period_start: periodAt(body.period, timeZone, now).start,
      spent_cost_usd: 0,
      spent_tokens: 0,
      warned: 0,
      exceeded: 0,
      paused_until: null,
      created_by: creator,
      created_at: now,
      updated_at: now,
    };
    const budget = await this.deps.store.inTransaction(async (tx) => {
      if ((await this.deps.store.count(tx)) >= MAX_BUDGETS)
        throw new Conflict(`There are ${MAX_BUDGETS} budgets already: delete some first`);
      await this.deps.audit.record(tx, { action: 'budget.create', resource: { type: 'budget', id: row.id } });
      await this.deps.store.insert(tx, row);
      await this.scopes.changedIn(tx);
      return toBudget(row, now);
    });
    // An ack that read the scopes while the budget was not committed yet does not keep them.
    this.scopes.forget();
    return budget;
  }

  async consumption(): Promise<{ budget_id: string; name: string; fraction: number }[]> {
    const now = this.deps.clock.now();
    return (await this.deps.store.all(autocommit)).map((stored) => {
      const row = current(stored, now);
      return { budget_id: row.id, name: row.name, fraction: ratioOf(row, { cost_usd: row.spent_cost_usd, tokens: row.spent_tokens }) };
    });
  }

  /** `pausing`: only the budgets whose pause has not ended (what the console flags). */
  async list(window: Page, pausing = false): Promise<Paged<Budget>> {
    const now = this.deps.clock.now();
    const page = await this.deps.store.list(autocommit, window, pausing ? now : null);
    return mapPage(page, (row) => toBudget(row, now));
  }

  async get(id: string): Promise<Budget> {
    const row = await this.deps.store.find(autocommit, id);
    if (!row) throw new NotFound('Budget', id);
    return toBudget(row, this.deps.clock.now());
  }

  /** A changed limit re-judges the period's consumption: under the new limit, the budget (and its scope) resumes. */
  async update(id: string, body: UpdateBudgetBody, actor: string): Promise<Budget> {
    const { budget, resumed } = await this.deps.store.inTransaction(async (tx) => {
      const now = this.deps.clock.now();
      const row = await this.locked(tx, id, now);
      const next: BudgetRow = { ...row, updated_at: now };
      if (body.name !== undefined) next.name = body.name;
      if (body.limits !== undefined) {
        next.limit_cost_usd = body.limits.cost_usd ?? null;
        next.limit_tokens = body.limits.tokens ?? null;
      }
      if (body.warn_at !== undefined) next.warn_at = body.warn_at;
      if (body.action !== undefined) next.action = body.action;
      const ratio = ratioOf(next, { cost_usd: next.spent_cost_usd, tokens: next.spent_tokens });
      if (ratio < 1) Object.assign(next, { exceeded: 0, paused_until: null });
      if (next.warn_at === null || ratio < next.warn_at) next.warned = 0;
      if (next.action === 'warn') next.paused_until = null;
      await this.deps.audit.record(tx, { action: 'budget.update', resource: { type: 'budget', id } });
      await this.save(tx, row, next);
      const resumed = await this.resumedIn(tx, row, next, now, actor);
      return { budget: toBudget(next, now), resumed };
    });
    if (resumed) this.wake(resumed);
    return budget;
  }

  async remove(id: string): Promise<void> {
    const removed = await this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'budget.delete', resource: { type: 'budget', id } });
      const row = await this.deps.store.delete(tx, id);
      if (!row) throw new NotFound('Budget', id);
      await this.scopes.changedIn(tx);
      if (row.paused_until !== null) await this.paused.changedIn(tx);
      return row;
    });
    if (removed.paused_until !== null) this.wake(removed);
  }

  /** Ends the pause for the rest of the period (the budget stays exceeded and does not pause again in it). */
  async resume(id: string, actor: string): Promise<Budget> {
    const { budget, resumed } = await this.deps.store.inTransaction(async (tx) => {
      const now = this.deps.clock.now();
      const row = await this.locked(tx, id, now);
      const next: BudgetRow = { ...row, paused_until: null, updated_at: now };
      await this.deps.audit.record(tx, { action: 'budget.resume', resource: { type: 'budget', id } });
      await this.save(tx, row, next);
      const resumed = await this.resumedIn(tx, row, next, now, actor);
      return { budget: toBudget(next, now), resumed };
    });
    if (resumed) this.wake(resumed);
    return budget;
  }

  /** Whether no budget counts a record of these keys, as far as the scopes this node holds say (false when it holds none). */
  countsNone(keys: ScopeKeys): boolean {
    const scopes = this.scopes.peek();
    return scopes !== null && !anyCovers(scopes, keys);
  }

  /** Counts usage records against their budgets, in order, in the records' transaction. */
  async consume(tx: Tx, records: readonly (ScopeKeys & Spent)[]): Promise<void> {
    if (records.length === 0) return;
    // Read in `tx`: with one SQLite connection, a read outside it would wait for it to end.
    const scopes = await this.scopes.read(() => this.deps.store.scopes(tx));
    if (!records.some((record) => anyCovers(scopes, record))) return;
    const now = this.deps.clock.now();
    const locked = await this.deps.store.lockMatching(tx, records);
    const rows = new Map(locked.map((stored) => [stored.id, current(stored, now)]));
    const crossings: { row: BudgetRow; type: 'budget.warning' | 'budget.exceeded' }[] = [];
    for (const record of records) {
      const spend = { cost_usd: record.cost_usd, tokens: record.input_tokens + record.output_tokens };
      for (const stored of locked) {
        if (!covers(stored, record)) continue;
        const row = rows.get(stored.id)!;
        const spent = { cost_usd: row.spent_cost_usd + spend.cost_usd, tokens: row.spent_tokens + spend.tokens };
        const next: BudgetRow = { ...row, spent_cost_usd: spent.cost_usd, spent_tokens: spent.tokens };
        const ratio = ratioOf(row, spent);
        const crossed =
          !row.exceeded && ratio >= 1
            ? 'budget.exceeded'
            : !row.warned && row.warn_at !== null && ratio >= row.warn_at
              ? 'budget.warning'
              : null;
        if (crossed !== null) next.warned = 1;
        if (crossed === 'budget.exceeded') {
          next.exceeded = 1;
          if (row.action === 'pause') next.paused_until = periodAt(row.period as Period, row.time_zone, now).end;
        }
        rows.set(stored.id, next);
        if (crossed !== null) crossings.push({ row: next, type: crossed });
      }
    }
    for (const stored of locked) await this.save(tx, stored, rows.get(stored.id)!);
    for (const { row, type } of crossings) {
      await this.deps.events.append(tx, {
        type,
        subject: row.id,
        actor: SYSTEM_ACTOR,
        data: { budget: toBudget(row, now), paused: row.paused_until !== null },
        readers: this.readersOf(row),
      });
    }
  }

  /** Every scope a budget pauses now (what anyone who reads plans may know: not the budgets themselves). */
  async current(): Promise<ScopePause[]> {
    const now = this.deps.clock.now();
    return pausesAt(await this.readPaused(now), now);
  }

  /** What budgets pause, from the snapshot (read again once a node told of a change). */
  private readPaused(now: number): Promise<PausedUntil> {
    return this.paused.read(() => this.deps.store.pausedScopes(autocommit, now));
  }

  /**
   * AgentPauses port: from the snapshot, or (inside a transaction, which may have written what it
   * reads) from the database in it, without keeping what it read there.
   */
  async pauses(tx: Tx): Promise<PausedScopes> {
    const now = this.deps.clock.now();
    const until = tx === autocommit ? await this.readPaused(now) : (this.paused.peek() ?? (await this.deps.store.pausedScopes(tx, now)));
    return pausedAt(until, now);
  }

  /**
   * The receivers of the inboxes a pause held look again. Capability and plan pauses hold no
   * inbox: their steps wait before they send (step messages name no capability), and look again
   * on their own.
   */
  private wake(row: BudgetRow): void {
    if (row.scope_kind === 'agent') this.deps.inboxes.wake([row.scope_value]);
    else if (row.scope_kind === 'global') this.deps.inboxes.wakeAll();
  }

  /** Saves the budget's new state, telling every node when it paused or resumed its scope. */
  private async save(tx: Tx, before: BudgetRow, next: BudgetRow): Promise<void> {
    await this.deps.store.update(tx, next.id, next);
    if (before.paused_until !== next.paused_until) await this.paused.changedIn(tx);
  }

  private async locked(tx: Tx, id: string, now: number): Promise<BudgetRow> {
    const row = await this.deps.store.lock(tx, id);
    if (!row) throw new NotFound('Budget', id);
    return current(row, now);
  }

  /** Appends budget.resumed when the change ended a pause; returns the budget that resumed its scope. */
  private async resumedIn(tx: Tx, before: BudgetRow, after: BudgetRow, now: number, actor: string): Promise<BudgetRow | null> {
    const was = before.paused_until !== null && before.paused_until > now;
    if (!was || after.paused_until !== null) return null;
    await this.deps.events.append(tx, {
      type: 'budget.resumed',
      subject: after.id,
      actor,
      data: { budget: toBudget(after, now) },
      readers: this.readersOf(after),
    });
    return after;
  }

  /** An agent budget's events are its agent's (and admins'); the others admins' only. */
  private readersOf(row: BudgetRow) {
    return { agents: row.scope_kind === 'agent' ? [row.scope_value] : [] };
  }
}
