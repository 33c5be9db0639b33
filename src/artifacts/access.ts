import { actsForPlatform, type Principal } from '../auth/index.js';
import { autocommit } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import { Forbidden, NotFound } from '../kernel/errors.js';
import type { AgentGroups, AuditTrail } from '../kernel/ports.js';
import type { AccessList } from './schemas.js';
import type { ArtifactRow, ArtifactsStore } from './store.js';

/**
 * Who may read or change an artifact, and its shares. Its owner and admins may do both; an
 * agent it is shared with, or a member of a group it is shared with, may read it. The groups
 * are the memberships an admin granted (AgentGroups), never groups an agent declared itself.
 */
export class ArtifactAccess {
  constructor(
    private readonly deps: {
      store: ArtifactsStore;
      clock: Clock;
      /** The groups an admin granted an agent (access groups): members read what is shared with the group. */
      groups: AgentGroups;
      audit: AuditTrail;
    },
  ) {}

  private get store(): ArtifactsStore {
    return this.deps.store;
  }

  /** Who owns what the principal creates: its agent, else its actor. */
  ownerOf(principal: Principal): string {
    return principal.agentId ?? principal.actor;
  }

  async groupsOf(agentId: string | null): Promise<string[]> {
    if (agentId === null) return [];
    return this.deps.groups.groupsOf(agentId);
  }

  async find(id: string): Promise<ArtifactRow> {
    const row = await this.store.findArtifact(autocommit, id);
    if (!row) throw new NotFound('Artifact', id);
    return row;
  }

  /**
   * The artifact, if the caller may read it. Every read goes through here: the HTTP routes,
   * MCP's read_artifact and resources; the event log applies the same rule to artifact events
   * through their readers (ArtifactEvents.readersOf).
   */
  async readable(principal: Principal, id: string): Promise<ArtifactRow> {
    return this.readableBy({ admin: actsForPlatform(principal), owner: this.ownerOf(principal), agentId: principal.agentId }, id);
  }

  /** `readable` for a caller known by what it acts as (a message's sender). */
  async readableBy(viewer: { admin: boolean; owner: string; agentId: string | null }, id: string): Promise<ArtifactRow> {
    const row = await this.find(id);
    if (viewer.admin || row.owner === viewer.owner) return row;
    const agentId = viewer.agentId;
    if (agentId !== null) {
      const shares = await this.store.listShares(autocommit, id);
      if (shares.some((s) => s.kind === 'agent' && s.principal === agentId)) return row;
      const groupShares = shares.filter((s) => s.kind === 'group').map((s) => s.principal);
      if (groupShares.length > 0) {
        const groups = new Set(await this.groupsOf(agentId));
        if (groupShares.some((g) => groups.has(g))) return row;
      }
    }
    throw new Forbidden(`You have no access to artifact '${id}'`);
  }

  /** The artifact, if the caller may change it: its owner or an admin. */
  async writable(principal: Principal, id: string): Promise<ArtifactRow> {
    const row = await this.find(id);
    if (actsForPlatform(principal) || row.owner === this.ownerOf(principal)) return row;
    throw new Forbidden(`Only the owner ('${row.owner}') or an admin may change artifact '${id}'`);
  }

  // ---- shares ----

  private async accessOf(artifact: ArtifactRow): Promise<AccessList> {
    const shares = await this.store.listShares(autocommit, artifact.id);
    return {
      owner: artifact.owner,
      agents: shares.filter((s) => s.kind === 'agent').map((s) => s.principal),
      groups: shares.filter((s) => s.kind === 'group').map((s) => s.principal),
    };
  }

  async access(principal: Principal, id: string): Promise<AccessList> {
    return this.accessOf(await this.readable(principal, id));
  }

  async share(principal: Principal, id: string, body: { with_agents?: string[]; with_groups?: string[] }): Promise<AccessList> {
    const artifact = await this.writable(principal, id);
    const now = this.deps.clock.now();
    await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'artifact.share', resource: { type: 'artifact', id } });
      await this.store.addShares(tx, [
        ...[...new Set(body.with_agents ?? [])].map((p) => ({ artifact_id: id, kind: 'agent' as const, principal: p, created_at: now })),
        ...[...new Set(body.with_groups ?? [])].map((p) => ({ artifact_id: id, kind: 'group' as const, principal: p, created_at: now })),
      ]);
    });
    return this.accessOf(artifact);
  }

  async unshare(principal: Principal, id: string, body: { agents?: string[]; groups?: string[] }): Promise<AccessList> {
    const artifact = await this.writable(principal, id);
    await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'artifact.unshare', resource: { type: 'artifact', id } });
      await this.store.removeShares(tx, id, 'agent', body.agents ?? []);
      await this.store.removeShares(tx, id, 'group', body.groups ?? []);
    });
    return this.accessOf(artifact);
  }
}
