import { autocommit } from '../../kernel/tx.js';
import { iso, type Clock } from '../../kernel/clock.js';
import { NotFound } from '../../kernel/errors.js';
import { type Page, type Paged, mapPage } from '../../kernel/pagination.js';
import type { AgentGroups, AuditTrail } from '../../kernel/ports.js';
import type { AccessGroup, Membership } from './schemas.js';
import type { AccessGroupsStore, MemberRow } from './store.js';

function toMembership(row: MemberRow): Membership {
  return { group: row.group_name, agent_id: row.agent_id, granted_by: row.granted_by, granted_at: iso(Number(row.granted_at)) };
}

/**
 * Access groups: memberships only an admin grants and removes. They are the groups whose
 * shares an agent reads (artifacts, and the events of artifacts shared with a group). The
 * groups an agent declares on its capabilities are its own word and only route: trusting them
 * let any agent join `finance` and read what was shared with it.
 */
export class AccessGroupsService implements AgentGroups {
  constructor(private readonly deps: { store: AccessGroupsStore; clock: Clock; audit: AuditTrail }) {}

  /** Grants the membership; `created` is false when the agent was a member already (nothing changes). */
  async grant(group: string, agentId: string, actor: string): Promise<{ membership: Membership; created: boolean }> {
    const row: MemberRow = { group_name: group, agent_id: agentId, granted_by: actor, granted_at: this.deps.clock.now() };
    return this.deps.store.inTransaction(async (tx) => {
      const created = await this.deps.store.grant(tx, row);
      if (created) {
        await this.deps.audit.record(tx, { action: 'group_member.grant', resource: { type: 'group_member', id: `${group}/${agentId}` } });
        return { membership: toMembership(row), created };
      }
      const existing = await this.deps.store.find(tx, group, agentId);
      // Removed between the two statements: the grant wins on the next try; report what was asked.
      return { membership: toMembership(existing ?? row), created };
    });
  }

  /** Removes the membership (404 when the agent is not a member of the group). */
  async revoke(group: string, agentId: string): Promise<void> {
    await this.deps.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'group_member.revoke', resource: { type: 'group_member', id: `${group}/${agentId}` } });
      if (!(await this.deps.store.revoke(tx, group, agentId))) throw new NotFound(`Membership of agent '${agentId}' in group`, group);
    });
  }

  groupsOf(agentId: string): Promise<string[]> {
    return this.deps.store.groupsOf(autocommit, agentId);
  }

  /** Groups (those with a member), by name, each with its members. */
  async listGroups(window: Page): Promise<Paged<AccessGroup>> {
    const page = await this.deps.store.listGroups(autocommit, window);
    const members = await this.deps.store.membersOf(autocommit, page.items);
    return {
      ...page,
      items: page.items.map((group) => ({ group, members: members.filter((m) => m.group_name === group).map((m) => m.agent_id) })),
    };
  }

  /** A group's memberships, by agent id (404 for a group without members). */
  async listMembers(group: string, window: Page): Promise<Paged<Membership>> {
    const page = await this.deps.store.listMembers(autocommit, group, window);
    if (page.total === 0) throw new NotFound('Group', group);
    return mapPage(page, toMembership);
  }
}
