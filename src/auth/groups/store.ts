import type { Selectable } from 'kysely';
import { Store } from '../../db/store.js';
import type { Tx } from '../../kernel/tx.js';
import { dbOf } from '../../db/tx.js';
import { type Page, type Paged, mapPage } from '../../kernel/pagination.js';
import type { GroupMembersTable } from './tables.js';

export type MemberRow = Selectable<GroupMembersTable>;

export class AccessGroupsStore extends Store {
  /** Adds the membership; false when the agent is a member already (the row is left as it was). */
  async grant(tx: Tx, row: MemberRow): Promise<boolean> {
    const inserted = await dbOf(tx, this.db)
      .insertInto('group_members')
      .values(row)
      .onConflict((oc) => oc.columns(['group_name', 'agent_id']).doNothing())
      .returning('agent_id')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  async find(tx: Tx, group: string, agentId: string): Promise<MemberRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('group_members')
      .selectAll()
      .where('group_name', '=', group)
      .where('agent_id', '=', agentId)
      .executeTakeFirst();
  }

  /** Removes the membership; false when there was none. */
  async revoke(tx: Tx, group: string, agentId: string): Promise<boolean> {
    const result = await dbOf(tx, this.db)
      .deleteFrom('group_members')
      .where('group_name', '=', group)
      .where('agent_id', '=', agentId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** The groups the agent was granted, by name (the primary key's second column has its own index). */
  async groupsOf(tx: Tx, agentId: string): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('group_members')
      .select('group_name')
      .where('agent_id', '=', agentId)
      .orderBy('group_name')
      .execute();
    return rows.map((r) => r.group_name);
  }

  /** One page of group names (a group exists while it has a member). */
  async listGroups(tx: Tx, window: Page): Promise<Paged<string>> {
    const db = dbOf(tx, this.db);
    const query = db.selectFrom('group_members').select('group_name').groupBy('group_name').orderBy('group_name');
    const page = await this.paginate(tx, query, window, {
      count: async () => {
        const row = await db
          .selectFrom('group_members')
          .select((eb) => eb.fn.count<number>('group_name').distinct().as('n'))
          .executeTakeFirstOrThrow();
        return Number(row.n);
      },
    });
    return mapPage(page, (r) => r.group_name);
  }

  /** Every membership of these groups, by group and agent. */
  async membersOf(tx: Tx, groups: string[]): Promise<MemberRow[]> {
    if (groups.length === 0) return [];
    return dbOf(tx, this.db)
      .selectFrom('group_members')
      .selectAll()
      .where(this.caps.inTextList('group_name', groups))
      .orderBy('group_name')
      .orderBy('agent_id')
      .execute();
  }

  async listMembers(tx: Tx, group: string, window: Page): Promise<Paged<MemberRow>> {
    return this.paginate(
      tx,
      dbOf(tx, this.db).selectFrom('group_members').selectAll().where('group_name', '=', group).orderBy('agent_id'),
      window,
    );
  }
}
