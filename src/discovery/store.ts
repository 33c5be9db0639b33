import { sql, type Expression, type ExpressionBuilder, type RawBuilder, type Selectable, type SqlBool } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import type { Tx } from '../kernel/tx.js';
import { atomically, dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import { Statements, type Values } from '../db/statements.js';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { GroupsStore } from './groups-store.js';
import { HeartbeatsStore } from './heartbeats-store.js';
import type { DiscoveryCapabilitiesTable } from './tables.js';

export type CapabilityRow = Selectable<DiscoveryCapabilitiesTable>;
type CapabilityEb = ExpressionBuilder<Database, 'discovery_capabilities'>;

/** A capability joined with its agent's latest heartbeat (null columns: never sent one). */
export interface CandidateRow extends Pick<CapabilityRow, 'id' | 'agent_id' | 'capability' | 'metadata' | 'groups'> {
  load: number | null;
  last_heartbeat_at: number | null;
}

/** Which capabilities a lookup or listing means: an exact name or a `prefix.` of a wildcard. */
export interface CapabilityFilter {
  exact?: string;
  prefix?: string;
  group?: string;
  agentId?: string;
}

/** The change sequence counter; round-robin cursors live beside it under `rr:` names. */
const CHANGES = 'changes';
/** Highest change seq whose tombstone was pruned: a node behind it must rebuild its index. */
const PRUNED = 'changes_pruned';

export class DiscoveryStore extends Store {
  private readonly statements: Statements;
  /** Agent counts of recent lookups, by name, group and whether stale agents count. */
  private readonly liveCounts = new BoundedMap<string, { seq: number; total: number; oldest: number | null }>(1024);
  /** Agents' heartbeats and the health last announced for each. */
  readonly heartbeats: HeartbeatsStore;
  /** The groups capabilities carry, and their agents. */
  readonly groups: GroupsStore;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.statements = new Statements(db);
    this.heartbeats = new HeartbeatsStore(db, caps);
    this.groups = new GroupsStore(db, caps);
  }

  /**
   * Inserts or updates the agent's capability of that name (one statement, so two concurrent
   * registrations cannot duplicate it), replaces its groups and records the change, all in one
   * transaction. Returns the stored row.
   */
  async upsertCapability(tx: Tx, row: CapabilityRow, groups: string[]): Promise<CapabilityRow> {
    return atomically(tx, this.db, async (trx) => {
      const stored = await trx
        .insertInto('discovery_capabilities')
        .values(row)
        .onConflict((oc) =>
          oc.columns(['agent_id', 'capability']).doUpdateSet({
            metadata: row.metadata,
            groups: row.groups,
            max_concurrency: row.max_concurrency,
            updated_at: row.updated_at,
          }),
        )
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx.deleteFrom('discovery_capability_groups').where('capability_id', '=', stored.id).execute();
      if (groups.length > 0) {
        await trx
          .insertInto('discovery_capability_groups')
          .values(groups.map((group_name) => ({ capability_id: stored.id, group_name, agent_id: stored.agent_id })))
          .execute();
      }
      await this.recordChanges(trx, [stored.id], row.updated_at);
      return stored;
    });
  }

  /** Deletes capabilities (one, or every one of an agent) and records the changes; returns the ids. */
  async deleteCapabilities(tx: Tx, where: { id?: string; agentId?: string }, at: number): Promise<string[]> {
    return atomically(tx, this.db, async (trx) => {
      let query = trx.deleteFrom('discovery_capabilities').returning('id');
      if (where.id !== undefined) query = query.where('id', '=', where.id);
      if (where.agentId !== undefined) query = query.where('agent_id', '=', where.agentId);
      const ids = (await query.execute()).map((r) => r.id);
      if (ids.length > 0) await this.recordChanges(trx, ids, at);
      return ids;
    });
  }

  /**
   * Takes the next change seq and stamps the changed capabilities with it. The counter row
   * stays locked until commit (PostgreSQL row lock; SQLite has one writer), so seqs become
   * visible in order and a reader that saw seq n has seen every change up to n.
   */
  private async recordChanges(trx: Db, ids: string[], at: number): Promise<void> {
    const seq = await this.advance(trx, CHANGES);
    await trx
      .insertInto('discovery_changes')
      .values(ids.map((capability_id) => ({ capability_id, seq, changed_at: at })))
      .onConflict((oc) => oc.column('capability_id').doUpdateSet({ seq, changed_at: at }))
      .execute();
  }

  /** Adds one to a named counter (created at 1) and returns the new value. */
  private async advance(db: Db, name: string): Promise<number> {
    const row = await db
      .insertInto('discovery_counters')
      .values({ name, value: 1 })
      .onConflict((oc) => oc.column('name').doUpdateSet({ value: sql<number>`discovery_counters.value + 1` }))
      .returning('value')
      .executeTakeFirstOrThrow();
    return Number(row.value);
  }

  /** Advances a round-robin cursor; returns how many times it had been used before. */
  async nextCursor(tx: Tx, key: string): Promise<number> {
    return (await this.advance(dbOf(tx, this.db), `rr:${key}`)) - 1;
  }

  /** The smallest max_concurrency of the agent's capabilities (null: none declares one). */
  async concurrencyOf(tx: Tx, agentId: string): Promise<number | null> {
    const row = await dbOf(tx, this.db)
      .selectFrom('discovery_capabilities')
      .select((eb) => eb.fn.min('max_concurrency').as('limit'))
      .where('agent_id', '=', agentId)
      .executeTakeFirst();
    return row?.limit === null || row?.limit === undefined ? null : Number(row.limit);
  }

  async findCapability(tx: Tx, id: string): Promise<CapabilityRow | undefined> {
    return dbOf(tx, this.db).selectFrom('discovery_capabilities').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async listCapabilities(tx: Tx, filter: CapabilityFilter, window: Page): Promise<Paged<CapabilityRow>> {
    let query = dbOf(tx, this.db)
      .selectFrom('discovery_capabilities')
      .selectAll('discovery_capabilities')
      .orderBy('discovery_capabilities.id');
    query = this.applyFilter(query, filter);
    return this.paginate(tx, query, window);
  }

  /**
   * Capabilities matching the filter with their agents' heartbeats, in registration order.
   * With `freshSince`, agents whose last heartbeat is older are left out (unhealthy).
   */
  async candidates(tx: Tx, filter: CapabilityFilter, freshSince: number | null): Promise<CandidateRow[]> {
    return this.candidateQuery(dbOf(tx, this.db), filter, freshSince).orderBy('discovery_capabilities.id').execute();
  }

  /**
   * The first `limit` candidates of an exact capability name in a deterministic order, and
   * how many there are, reading only the rows returned: the order is the one routing.ts gives
   * (live agents first, then those older than `staleBefore`; first_available ranks healthy,
   * degraded (load ≥ `degradedLoad`), then silent agents; least_loaded ranks by load with
   * unknown loads last; ties by registration). first_available walks the name's index tier by
   * tier and stops at `limit`, instead of sorting every agent of the capability.
   *
   * The count comes first and apart from the rows, so a name without live agents reads no
   * rows: on 100 candidates a window count cost more than reading the 20 rows (measured with
   * better-sqlite3: 20 rows 0.07 ms, + `count(*) over ()` 0.22 ms, all 100 rows 0.32 ms), and
   * carrying it as a scalar subquery of the first read saved nothing in SQLite. It reads the
   * name's (capability, id, agent_id) index and the agents' heartbeats, and is kept between
   * lookups while the change counter and the heartbeat times say it holds (see `liveCount`).
   */
  async rankedCandidates(
    tx: Tx,
    filter: { exact: string; group?: string },
    options: {
      order: 'first_available' | 'least_loaded';
      includeUnhealthy: boolean;
      staleBefore: number;
      degradedLoad: number;
      limit: number;
    },
  ): Promise<{ rows: CandidateRow[]; total: number }> {
    const db = dbOf(tx, this.db);
    const { order, includeUnhealthy, limit } = options;
    const grouped = filter.group !== undefined;
    const values = { capability: filter.exact, group: filter.group, staleBefore: options.staleBefore, degradedLoad: options.degradedLoad };
    type V = Values<keyof typeof values>;
    const shape = `${order}:${includeUnhealthy}:${grouped}`;
    const from = (v: V) =>
      sql`discovery_capabilities c left join discovery_heartbeats h on h.agent_id = c.agent_id where c.capability = ${v.capability}${
        grouped
          ? sql` and exists (select 1 from discovery_capability_groups g where g.capability_id = c.id and g.group_name = ${v.group})`
          : sql``
      }`;
    const live = (v: V) => (includeUnhealthy ? sql`` : sql` and (h.last_heartbeat_at is null or h.last_heartbeat_at >= ${v.staleBefore})`);

    const total = await this.liveCount(
      `${includeUnhealthy}:${grouped}:${filter.exact}\0${filter.group ?? ''}`,
      options.staleBefore,
      db,
      async () => {
        const { rows } = await db.executeQuery(
          this.statements.compiled(
            `count:${grouped}`,
            values,
            (v) =>
              sql<{ n: number; stale: number | null; oldest: number | null }>`select count(*) as n,
            sum(case when h.last_heartbeat_at < ${v.staleBefore} then 1 else 0 end) as stale,
            min(h.last_heartbeat_at) as oldest from ${from(v)}`,
          ),
        );
        const n = Number(rows[0]?.n ?? 0);
        const oldest = rows[0]?.oldest;
        if (includeUnhealthy) return { total: n, oldest: null };
        return { total: n - Number(rows[0]?.stale ?? 0), oldest: oldest === null || oldest === undefined ? null : Number(oldest) };
      },
    );
    const rows: CandidateRow[] = [];
    // Limits are inlined: a bound LIMIT is prepared again on every run on SQLite (see database.ts).
    const read = async (tier: string, condition: (v: V) => RawBuilder<unknown>, orderBy: (v: V) => RawBuilder<unknown>) => {
      const take = limit - rows.length;
      const query = this.statements.compiled(
        `ranked:${shape}:${tier}:${take}`,
        values,
        (v) =>
          sql<CandidateRow>`select c.id, c.agent_id, c.capability, c.metadata, c.groups, h.load, h.last_heartbeat_at
          from ${from(v)} and ${condition(v)} order by ${orderBy(v)} limit ${sql.lit(take)}`,
      );
      rows.push(...(await db.executeQuery(query)).rows);
    };
    if (total === 0) return { rows, total };

    if (order === 'least_loaded') {
      await read(
        'load',
        (v) => sql`1 = 1${live(v)}`,
        (v) =>
          sql`case when h.last_heartbeat_at < ${v.staleBefore} then 1 else 0 end, case when h.load is null then 1 else 0 end, h.load, c.id`,
      );
      return { rows, total };
    }
    const tiers: [string, (v: V) => RawBuilder<unknown>][] = [
      ['healthy', (v) => sql`h.last_heartbeat_at >= ${v.staleBefore} and (h.load is null or h.load < ${v.degradedLoad})`],
      ['degraded', (v) => sql`h.last_heartbeat_at >= ${v.staleBefore} and h.load >= ${v.degradedLoad}`],
      ['silent', () => sql`h.last_heartbeat_at is null`],
      ['stale', (v) => sql`h.last_heartbeat_at < ${v.staleBefore}`],
    ];
    for (const [tier, condition] of includeUnhealthy ? tiers : tiers.slice(0, 3)) {
      if (rows.length >= limit || rows.length >= total) break;
      await read(tier, condition, () => sql`c.id`);
    }
    return { rows, total };
  }

  /**
   * How many agents a name (and group) has, from `count`, or from an earlier count while it
   * still holds: every capability change advances the `changes` counter, and only time turns
   * a live agent stale, which the oldest heartbeat of the name says when. A count that saw a
   * stale agent (its oldest heartbeat is already too old) is therefore never used again, as a
   * heartbeat could bring that agent back unseen. The check is one read of the counter (SQLite,
   * 100 agents of a name: ~3 µs against ~30 µs for the count, measured); a caller's
   * transaction always counts, inside that transaction. `oldest` null: no time limit.
   */
  private async liveCount(
    key: string,
    staleBefore: number,
    db: Db,
    count: () => Promise<{ total: number; oldest: number | null }>,
  ): Promise<number> {
    if (db !== this.db) return (await count()).total;
    const seq = await this.counter(db, CHANGES);
    const kept = this.liveCounts.get(key);
    if (kept && kept.seq === seq && (kept.oldest === null || kept.oldest >= staleBefore)) return kept.total;
    // The counter is read first: a change between the two reads only makes the next lookup count again.
    const counted = await count();
    this.liveCounts.set(key, { seq, ...counted });
    return counted.total;
  }

  private candidateQuery(db: Db, filter: CapabilityFilter, freshSince: number | null) {
    let query = db
      .selectFrom('discovery_capabilities')
      .leftJoin('discovery_heartbeats', 'discovery_heartbeats.agent_id', 'discovery_capabilities.agent_id')
      .select([
        'discovery_capabilities.id',
        'discovery_capabilities.agent_id',
        'discovery_capabilities.capability',
        'discovery_capabilities.metadata',
        'discovery_capabilities.groups',
        'discovery_heartbeats.load',
        'discovery_heartbeats.last_heartbeat_at',
      ]);
    query = this.applyFilter(query, filter);
    if (freshSince !== null) {
      query = query.where((eb) =>
        eb.or([eb('discovery_heartbeats.last_heartbeat_at', 'is', null), eb('discovery_heartbeats.last_heartbeat_at', '>=', freshSince)]),
      );
    }
    return query;
  }

  // Kysely types a where-callback by the tables in the query; a lookup joins heartbeats, a
  // listing does not. Both only filter on capability columns, hence the one widening cast.
  private applyFilter<Q extends { where: (expression: (eb: CapabilityEb) => Expression<SqlBool>) => Q }>(
    query: Q,
    filter: CapabilityFilter,
  ): Q {
    return query.where((eb) => {
      const conditions: Expression<SqlBool>[] = [];
      if (filter.exact !== undefined) conditions.push(eb('discovery_capabilities.capability', '=', filter.exact));
      if (filter.prefix !== undefined) {
        // substr, not LIKE: names may hold `_`, a LIKE wildcard; substr means the same on both dialects.
        conditions.push(eb(sql`substr(discovery_capabilities.capability, 1, ${filter.prefix.length})`, '=', filter.prefix));
      }
      if (filter.agentId !== undefined) conditions.push(eb('discovery_capabilities.agent_id', '=', filter.agentId));
      if (filter.group !== undefined) {
        conditions.push(
          eb.exists(
            eb
              .selectFrom('discovery_capability_groups')
              .select(sql.lit(1).as('one'))
              .whereRef('discovery_capability_groups.capability_id', '=', 'discovery_capabilities.id')
              .where('discovery_capability_groups.group_name', '=', filter.group),
          ),
        );
      }
      return eb.and(conditions);
    });
  }

  async hasCapabilities(tx: Tx, agentId: string): Promise<boolean> {
    const row = await dbOf(tx, this.db)
      .selectFrom('discovery_capabilities')
      .select('id')
      .where('agent_id', '=', agentId)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Every capability (search index rebuild) and the change seq it reflects. */
  async snapshot(tx: Tx): Promise<{ rows: CapabilityRow[]; seq: number }> {
    const db = dbOf(tx, this.db);
    // Read the seq first: a change committed between the two reads is applied again by the
    // next sync, which is harmless; the reverse order could miss one.
    const seq = await this.counter(db, CHANGES);
    const rows = await db.selectFrom('discovery_capabilities').selectAll().orderBy('id').execute();
    return { rows, seq };
  }

  /** The change seq and the pruning mark: a cheap "did anything change?" probe. */
  async changeMarks(tx: Tx): Promise<{ seq: number; pruned: number }> {
    // Asked before every search.
    const query = this.statements.compiled(
      'marks',
      { changes: CHANGES, pruned: PRUNED },
      (v) => sql<{ name: string; value: number }>`select name, value from discovery_counters where name in (${v.changes}, ${v.pruned})`,
    );
    const { rows } = await dbOf(tx, this.db).executeQuery(query);
    const value = (name: string) => Number(rows.find((r) => r.name === name)?.value ?? 0);
    return { seq: value(CHANGES), pruned: value(PRUNED) };
  }

  /** Capabilities changed after `seq`, with their current rows (undefined when deleted). */
  async changesSince(tx: Tx, seq: number): Promise<{ capability_id: string; seq: number; row: CapabilityRow | undefined }[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('discovery_changes')
      .leftJoin('discovery_capabilities', 'discovery_capabilities.id', 'discovery_changes.capability_id')
      .select([
        'discovery_changes.capability_id',
        'discovery_changes.seq',
        'discovery_capabilities.id',
        'discovery_capabilities.agent_id',
        'discovery_capabilities.capability',
        'discovery_capabilities.metadata',
        'discovery_capabilities.groups',
        'discovery_capabilities.max_concurrency',
        'discovery_capabilities.created_at',
        'discovery_capabilities.updated_at',
      ])
      .where('discovery_changes.seq', '>', seq)
      .orderBy('discovery_changes.seq')
      .execute();
    return rows.map((r) => ({
      capability_id: r.capability_id,
      seq: Number(r.seq),
      row:
        r.id === null
          ? undefined
          : {
              id: r.id,
              agent_id: r.agent_id!,
              capability: r.capability!,
              metadata: r.metadata!,
              groups: r.groups!,
              max_concurrency: r.max_concurrency,
              created_at: r.created_at!,
              updated_at: r.updated_at!,
            },
    }));
  }

  /**
   * Forgets the changes of capabilities deleted before `before` (their tombstones), raising
   * the pruning mark so a node that had not seen them rebuilds instead of missing a delete.
   */
  async pruneTombstones(tx: Tx, before: number): Promise<number> {
    return atomically(tx, this.db, async (trx) => {
      await this.caps.transactionLock(trx, 'discovery:prune');
      const gone = await trx
        .selectFrom('discovery_changes')
        .leftJoin('discovery_capabilities', 'discovery_capabilities.id', 'discovery_changes.capability_id')
        .select(['discovery_changes.capability_id', 'discovery_changes.seq'])
        .where('discovery_capabilities.id', 'is', null)
        .where('discovery_changes.changed_at', '<', before)
        .execute();
      if (gone.length === 0) return 0;
      const mark = Math.max(...gone.map((g) => Number(g.seq)));
      await trx
        .deleteFrom('discovery_changes')
        .where(
          'capability_id',
          'in',
          gone.map((g) => g.capability_id),
        )
        .execute();
      await trx
        .insertInto('discovery_counters')
        .values({ name: PRUNED, value: mark })
        .onConflict((oc) =>
          oc.column('name').doUpdateSet({
            value: sql<number>`case when excluded.value > discovery_counters.value then excluded.value else discovery_counters.value end`,
          }),
        )
        .execute();
      return gone.length;
    });
  }

  private async counter(db: Db, name: string): Promise<number> {
    const query = this.statements.compiled(
      'counter',
      { name },
      (v) => sql<{ value: number }>`select value from discovery_counters where name = ${v.name}`,
    );
    const { rows } = await db.executeQuery(query);
    return Number(rows[0]?.value ?? 0);
  }
}
