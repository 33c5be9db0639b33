import type { Tx } from '../kernel/tx.js';
import type { AuditTrail, EventLog, NewEvent } from '../kernel/ports.js';
import { toArtifact } from './artifact-rows.js';
import type { ArtifactRow, ArtifactsStore } from './store.js';

export type EventReaders = NonNullable<NewEvent['readers']>;

/**
 * The events of an artifact's life (artifact.created, artifact.version_created,
 * artifact.deleted), each appended in the transaction of its change and read only by those who
 * may read the artifact: the event log applies the artifact's access rule through their readers.
 */
export class ArtifactEvents {
  constructor(private readonly deps: { store: ArtifactsStore; events: EventLog; audit: AuditTrail }) {}

  /** Who may read the artifact's events: its owner, the agents and the groups it is shared with. */
  async readersOf(tx: Tx, artifact: Pick<ArtifactRow, 'id' | 'owner'>): Promise<EventReaders> {
    const shares = await this.deps.store.listShares(tx, artifact.id);
    return {
      agents: [artifact.owner, ...shares.filter((s) => s.kind === 'agent').map((s) => s.principal)],
      groups: shares.filter((s) => s.kind === 'group').map((s) => s.principal),
    };
  }

  /** A new artifact's audit record and event: only its owner reads it (it has no shares yet). */
  async created(tx: Tx, artifact: ArtifactRow, actor: string): Promise<void> {
    await this.deps.audit.record(tx, { action: 'artifact.create', resource: { type: 'artifact', id: artifact.id } });
    await this.deps.events.append(tx, {
      type: 'artifact.created',
      subject: artifact.id,
      actor,
      data: { artifact: toArtifact(artifact) },
      readers: { agents: [artifact.owner] },
    });
  }

  /** `artifact` as its new current version made it. */
  async versionCreated(tx: Tx, artifact: ArtifactRow, actor: string): Promise<void> {
    await this.deps.events.append(tx, {
      type: 'artifact.version_created',
      subject: artifact.id,
      actor,
      data: { artifact: toArtifact(artifact), version: artifact.current_version },
      readers: await this.readersOf(tx, artifact),
    });
  }

  /** `readers`: read before the artifact's shares went with it. */
  async deleted(tx: Tx, artifact: ArtifactRow, readers: EventReaders, actor: string): Promise<void> {
    await this.deps.events.append(tx, {
      type: 'artifact.deleted',
      subject: artifact.id,
      actor,
      data: { artifact: toArtifact(artifact) },
      readers,
    });
  }
}
