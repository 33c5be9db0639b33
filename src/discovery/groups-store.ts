import { type AliasableExpression, type ExpressionBuilder, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { DiscoveryCapabilitiesTable } from './tables.js';

type CapabilityRow = Selectable<DiscoveryCapabilitiesTable>;

export interface GroupCount {
  name: string;
  agent_count: number;
  capability_count: number;
}

/** The SQL of the groups agents declare on their capabilities: the groups, and each group's agents. */
export class GroupsStore extends Store {
  async listGroups(tx: Tx, window: Page): Promise<Paged<GroupCount>> {
    const db = dbOf(tx, this.db);
    const query = db
      .selectFrom('discovery_capability_groups')
      .select((eb) => [
        'group_name as name',
        eb.fn.count<number>('agent_id').distinct().as('agent_count'),
        eb.fn.countAll<number>().as('capability_count'),
      ])
      .groupBy('group_name')
      .orderBy('group_name');
    const page = await this.pageOfGroups(tx, query, window, (eb) => eb.fn.count<number>('group_name').distinct());
    return {
      ...page,
      items: page.items.map((g) => ({ name: g.name, agent_count: Number(g.agent_count), capability_count: Number(g.capability_count) })),
    };
  }

  /** One page of a group's agents (by agent id) and the total number of agents in it. */
  async groupAgents(tx: Tx, group: string, window: Page): Promise<Paged<string>> {
    const db = dbOf(tx, this.db);
    const query = db
      .selectFrom('discovery_capability_groups')
      .select('agent_id')
      .where('group_name', '=', group)
      .groupBy('agent_id')
      .orderBy('agent_id');
    const page = await this.pageOfGroups(tx, query, window, (eb) => eb.fn.count<number>('agent_id').distinct(), group);
    return mapPage(page, (r) => r.agent_id);
  }

  /** paginate() for a GROUP BY query: the total counts `distinct` groups, not rows. */
  private async pageOfGroups<O>(
    tx: Tx,
    query: SelectQueryBuilder<Database, 'discovery_capability_groups', O>,
    window: Page,
    distinct: (eb: ExpressionBuilder<Database, 'discovery_capability_groups'>) => AliasableExpression<number>,
    group?: string,
  ): Promise<Paged<O>> {
    return this.paginate(tx, query, window, {
      count: async () => {
        let count = dbOf(tx, this.db)
          .selectFrom('discovery_capability_groups')
          .select((eb) => distinct(eb).as('n'));
        if (group !== undefined) count = count.where('group_name', '=', group);
        return Number((await count.executeTakeFirst())?.n ?? 0);
      },
    });
  }

  /** The capabilities of these agents that carry the group. */
  async capabilitiesInGroup(tx: Tx, group: string, agentIds: string[]): Promise<CapabilityRow[]> {
    if (agentIds.length === 0) return [];
    return dbOf(tx, this.db)
      .selectFrom('discovery_capabilities')
      .innerJoin('discovery_capability_groups', 'discovery_capability_groups.capability_id', 'discovery_capabilities.id')
      .selectAll('discovery_capabilities')
      .where('discovery_capability_groups.group_name', '=', group)
      .where('discovery_capabilities.agent_id', 'in', agentIds)
      .orderBy('discovery_capabilities.id')
      .execute();
  }
}
