import { sql, type Selectable } from 'kysely';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Db } from '../db/database.js';
import type { Tx } from '../kernel/tx.js';
import { atomically, dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import { Statements } from '../db/statements.js';
import type { DiscoveryHeartbeatsTable } from './tables.js';

export type HeartbeatRow = Selectable<DiscoveryHeartbeatsTable>;

/** The SQL of agents' heartbeats, and of the health last announced for each agent. */
export class HeartbeatsStore extends Store {
  private readonly statements: Statements;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.statements = new Statements(db);
  }

  /**
   * Records a heartbeat in one upsert. A gap longer than the TTL ends the agent's uptime (the
   * new run starts at this beat); a beat without load or metadata keeps the previous ones.
   */
  async heartbeat(tx: Tx, row: HeartbeatRow, options: { ttlMs: number; keepMetadata: boolean }): Promise<HeartbeatRow> {
    const query = this.statements.compiled(
      `heartbeat:${options.keepMetadata}`,
      { ...row, ttlMs: options.ttlMs },
      (v) =>
        sql<HeartbeatRow>`insert into discovery_heartbeats (agent_id, load, metadata, started_at, last_heartbeat_at)
        values (${v.agent_id}, ${v.load}, ${v.metadata}, ${v.started_at}, ${v.last_heartbeat_at})
        on conflict (agent_id) do update set
          load = coalesce(excluded.load, discovery_heartbeats.load),
          metadata = ${options.keepMetadata ? sql`discovery_heartbeats.metadata` : sql`excluded.metadata`},
          started_at = case when excluded.last_heartbeat_at - discovery_heartbeats.last_heartbeat_at > ${v.ttlMs}
            then excluded.started_at else discovery_heartbeats.started_at end,
          last_heartbeat_at = excluded.last_heartbeat_at
        returning *`,
    );
    const { rows } = await dbOf(tx, this.db).executeQuery(query);
    return rows[0]!;
  }

  async findHeartbeat(tx: Tx, agentId: string): Promise<HeartbeatRow | undefined> {
    return dbOf(tx, this.db).selectFrom('discovery_heartbeats').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
  }

  async heartbeatsOf(tx: Tx, agentIds: string[]): Promise<HeartbeatRow[]> {
    if (agentIds.length === 0) return [];
    return dbOf(tx, this.db).selectFrom('discovery_heartbeats').selectAll().where('agent_id', 'in', agentIds).execute();
  }

  /** Deletes the agent's heartbeat record and the health last announced for it. */
  async deleteHeartbeat(tx: Tx, agentId: string): Promise<boolean> {
    return atomically(tx, this.db, async (trx) => {
      await trx.deleteFrom('discovery_health').where('agent_id', '=', agentId).execute();
      const result = await trx.deleteFrom('discovery_heartbeats').where('agent_id', '=', agentId).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  /** Every heartbeat with the health last announced for its agent (null: none yet). */
  async heartbeatsWithHealth(
    tx: Tx,
  ): Promise<(Pick<HeartbeatRow, 'agent_id' | 'load' | 'last_heartbeat_at'> & { announced: string | null })[]> {
    return dbOf(tx, this.db)
      .selectFrom('discovery_heartbeats as h')
      .leftJoin('discovery_health as s', 's.agent_id', 'h.agent_id')
      .select(['h.agent_id', 'h.load', 'h.last_heartbeat_at', 's.health as announced'])
      .execute();
  }

  /**
   * Records `health` as announced for the agent unless it is already: true when this call
   * changed it. One conditional upsert, so of two nodes that saw the same change one announces it.
   */
  async announceHealth(tx: Tx, agentId: string, health: string, at: number): Promise<boolean> {
    const row = await dbOf(tx, this.db)
      .insertInto('discovery_health')
      .values({ agent_id: agentId, health, changed_at: at })
      .onConflict((oc) => oc.column('agent_id').doUpdateSet({ health, changed_at: at }).where('discovery_health.health', '<>', health))
      .returning('agent_id')
      .executeTakeFirst();
    return row !== undefined;
  }
}
