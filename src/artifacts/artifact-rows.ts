import { iso } from '../kernel/clock.js';
import { newId } from '../kernel/ids.js';
import type { Artifact, ArtifactVersion } from './schemas.js';
import type { ArtifactRow, VersionRow } from './store.js';

/** An artifact's rows: as callers see them, and as a new artifact writes them. */

export function toArtifact(row: ArtifactRow): Artifact {
  return {
    id: row.id,
    name: row.name,
    content_type: row.content_type,
    size_bytes: Number(row.size_bytes),
    sha256: row.sha256,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    version: row.current_version,
    owner: row.owner,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function toVersion(row: VersionRow): ArtifactVersion {
  return {
    version: row.version,
    content_type: row.content_type,
    size_bytes: Number(row.size_bytes),
    sha256: row.sha256,
    created_at: iso(row.created_at),
    created_by: row.created_by,
  };
}

/** What a new artifact is made of, whichever way its bytes arrived (a form, a snippet, an upload URL). */
export interface NewArtifact {
  owner: string;
  name: string;
  content_type: string;
  metadata: Record<string, unknown>;
  sha256: string;
  size_bytes: number;
}

/** The rows of a new artifact and of its version 1. */
export function newArtifactRows(input: NewArtifact, createdBy: string, now: number): { artifact: ArtifactRow; version: VersionRow } {
  const id = newId('art', now);
  return {
    artifact: {
      id,
      name: input.name,
      owner: input.owner,
      metadata: JSON.stringify(input.metadata),
      current_version: 1,
      last_version: 1,
      content_type: input.content_type,
      size_bytes: input.size_bytes,
      sha256: input.sha256,
      created_at: now,
      updated_at: now,
    },
    version: {
      artifact_id: id,
      version: 1,
      content_type: input.content_type,
      size_bytes: input.size_bytes,
      sha256: input.sha256,
      created_by: createdBy,
      created_at: now,
    },
  };
}
