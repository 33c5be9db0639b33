import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { Store } from '../db/store.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';

/**
 * What the alert conditions read of the domains they watch: one grouped, indexed query per
 * condition type and pass, whatever the number of rules. Read only; the alerts domain writes
 * none of these tables.
 */

/** One event_count rule as one column of the pass's counting statement. */
export interface EventCountFilter {
  /** Concrete event types (a pattern expanded against the closed list); null: every type. */
  types: readonly string[] | null;
  since: number;
  /** The window's end (inclusive); none: now. */
  until?: number;
  subject?: string;
  plan_id?: string;
}

/** An event as the incremental counts read it: what a filter matches on, and its plan when asked for. */
export interface CountedEvent {
  type: string;
  subject: string | null;
  created_at: number;
  plan_id: string | null;
}

/** event_count rules counted by one statement at most (one column each). */
const COUNTS_PER_STATEMENT = 100;

export class SignalsStore extends Store {
  /** The log's last position (0 when empty): where the next pass's windows may start. */
  async lastEventSeq(tx: Tx): Promise<number> {
    const row = await dbOf(tx, this.db)
      .selectFrom('events')
      .select((eb) => eb.fn.max('seq').as('seq'))
      .executeTakeFirst();
    return Number(row?.seq ?? 0);
  }

  /**
   * How many events match each filter, in its order: one pass over the events after `afterSeq`
   * (a position before every window's start) per COUNTS_PER_STATEMENT filters, each filter a
   * conditional sum, on the (type, seq) index when every filter names types.
   */
  async countEvents(tx: Tx, filters: readonly EventCountFilter[], afterSeq: number, upToSeq?: number): Promise<number[]> {
    const counts: number[] = [];
    for (let start = 0; start < filters.length; start += COUNTS_PER_STATEMENT) {
      const chunk = filters.slice(start, start + COUNTS_PER_STATEMENT);
      const since = Math.min(...chunk.map((f) => f.since));
      const types = chunk.some((f) => f.types === null) ? null : [...new Set(chunk.flatMap((f) => f.types!))];
      let query = dbOf(tx, this.db).selectFrom('events').where('seq', '>', afterSeq).where('created_at', '>=', since);
      if (upToSeq !== undefined) query = query.where('seq', '<=', upToSeq);
      if (types !== null) query = query.where(this.caps.inTextList('type', types));
      const row = (await query
        .select(chunk.map((filter, i) => sql<number | string>`sum(case when ${this.matches(filter)} then 1 else 0 end)`.as(`c${i}`)))
        .executeTakeFirst()) as Record<string, number | string | null> | undefined;
      chunk.forEach((_, i) => counts.push(Number(row?.[`c${i}`] ?? 0)));
    }
    return counts;
  }

  /**
   * The events after `afterSeq` up to `upToSeq` created in [since, until), at most `limit`, with
   * the plan of their data when `withPlan` (run events carry it): on the primary key's range.
   */
  async eventsBetween(
    tx: Tx,
    range: { afterSeq: number; upToSeq: number; since: number; until?: number },
    withPlan: boolean,
    limit: number,
  ): Promise<CountedEvent[]> {
    let query = dbOf(tx, this.db)
      .selectFrom('events')
      .select(['type', 'subject', 'created_at'])
      .select(withPlan ? this.planOfData().as('plan_id') : sql<null>`null`.as('plan_id'))
      .where('seq', '>', range.afterSeq)
      .where('seq', '<=', range.upToSeq)
      .where('created_at', '>=', range.since);
    if (range.until !== undefined) query = query.where('created_at', '<', range.until);
    const rows = await query.limit(limit).execute();
    return rows.map((row) => ({ ...row, created_at: Number(row.created_at) }));
  }

  private planOfData(): RawBuilder<string | null> {
    return this.caps.kind === 'postgres'
      ? sql<string | null>`(data::json ->> 'plan_id')`
      : sql<string | null>`json_extract(data, '$.plan_id')`;
  }

  private matches(filter: EventCountFilter): RawBuilder<SqlBool> {
    const parts: RawBuilder<unknown>[] = [sql`created_at >= ${filter.since}`];
    if (filter.until !== undefined) parts.push(sql`created_at <= ${filter.until}`);
    if (filter.types !== null) parts.push(this.caps.inTextList('type', filter.types));
    if (filter.subject !== undefined) parts.push(sql`subject = ${filter.subject}`);
    // Run events carry their plan in `data`, written by JSON.stringify: no spaces.
    if (filter.plan_id !== undefined) parts.push(this.contains('data', `"plan_id":${JSON.stringify(filter.plan_id)}`));
    return sql<SqlBool>`(${sql.join(parts, sql` and `)})`;
  }

  private contains(column: string, text: string): RawBuilder<SqlBool> {
    return this.caps.kind === 'postgres'
      ? sql<SqlBool>`strpos(${sql.ref(column)}, ${text}) > 0`
      : sql<SqlBool>`instr(${sql.ref(column)}, ${text}) > 0`;
  }

  /** Per agent: dead letters kept (not redriven). */
  async deadLetters(tx: Tx): Promise<{ agent_id: string; count: number }[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('messages')
      .where('state', '=', 'dead')
      .select((eb) => ['destination', eb.fn.countAll<number | string>().as('n')])
      .groupBy('destination')
      .execute();
    return rows.map((row) => ({ agent_id: row.destination, count: Number(row.n) }));
  }

  /**
   * Agents whose last heartbeat is at or before `before` (unhealthy since then plus the TTL),
   * with the capabilities among `capabilities` they offer.
   */
  async silentAgents(
    tx: Tx,
    before: number,
    capabilities: readonly string[],
  ): Promise<{ agent_id: string; last_heartbeat_at: number; capabilities: string[] }[]> {
    const db = dbOf(tx, this.db);
    const rows = await db
      .selectFrom('discovery_heartbeats')
      .select(['agent_id', 'last_heartbeat_at'])
      .where('last_heartbeat_at', '<=', before)
      .orderBy('agent_id')
      .execute();
    const offered = new Map<string, string[]>();
    if (rows.length > 0 && capabilities.length > 0) {
      const caps = await db
        .selectFrom('discovery_capabilities')
        .select(['agent_id', 'capability'])
        .where(this.caps.inTextList('capability', capabilities))
        .where(
          this.caps.inTextList(
            'agent_id',
            rows.map((r) => r.agent_id),
          ),
        )
        .execute();
      for (const row of caps) offered.set(row.agent_id, [...(offered.get(row.agent_id) ?? []), row.capability]);
    }
    return rows.map((row) => ({ ...row, last_heartbeat_at: Number(row.last_heartbeat_at), capabilities: offered.get(row.agent_id) ?? [] }));
  }

  /** Human steps waiting since `before` or earlier, oldest first, with their run's plan. */
  async waitingHumanSteps(tx: Tx, before: number): Promise<{ run_id: string; step_id: string; plan_id: string; started_at: number }[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('run_steps as s')
      .innerJoin('runs as r', 'r.id', 's.run_id')
      .select(['s.run_id', 's.step_id', 'r.plan_id', 's.started_at'])
      .where('r.status', 'in', ['running', 'waiting'])
      .where('s.status', '=', 'waiting')
      .where('s.started_at', '<=', before)
      .orderBy('s.started_at')
      .execute();
    return rows.map((row) => ({ ...row, started_at: Number(row.started_at) }));
  }

  /** Per routine: failed executions since its last successful one. */
  async failureStreaks(tx: Tx): Promise<{ routine_id: string; failures: number }[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('routine_executions as e')
      .where('e.status', '=', 'failed')
      .where(({ eb, selectFrom, fn }) =>
        eb(
          'e.id',
          '>',
          fn.coalesce(
            selectFrom('routine_executions as s')
              .select((s) => s.fn.max('s.id').as('last'))
              .whereRef('s.routine_id', '=', 'e.routine_id')
              .where('s.status', '=', 'success'),
            sql<string>`''`,
          ),
        ),
      )
      .select((eb) => ['e.routine_id', eb.fn.countAll<number | string>().as('n')])
      .groupBy('e.routine_id')
      .execute();
    return rows.map((row) => ({ routine_id: row.routine_id, failures: Number(row.n) }));
  }
}
