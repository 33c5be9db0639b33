export interface ArtifactsTable {
  id: string;
  name: string;
  owner: string;
  /** JSON object. */
  metadata: string;
  current_version: number;
  last_version: number;
  content_type: string;
  size_bytes: number;
  sha256: string;
  created_at: number;
  updated_at: number;
}

export interface ArtifactVersionsTable {
  artifact_id: string;
  version: number;
  content_type: string;
  size_bytes: number;
  sha256: string;
  created_by: string;
  created_at: number;
}

export interface ArtifactSharesTable {
  artifact_id: string;
  kind: 'agent' | 'group';
  principal: string;
  created_at: number;
}

export interface ArtifactUploadsTable {
  id: string;
  owner: string;
  name: string;
  content_type: string;
  metadata: string;
  size_bytes: number;
  sha256: string | null;
  expires_at: number;
  /** The sha256 of the bytes received so far (a content reference, like a version's sha256). */
  blob_sha256: string | null;
  received_bytes: number | null;
  created_at: number;
}

/** Small contents, kept in the database instead of a blob file (migration 0009). */
export interface ArtifactContentsTable {
  sha256: string;
  bytes: Buffer;
}

/** The artifacts tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface ArtifactsTables {
  artifacts: ArtifactsTable;
  artifact_contents: ArtifactContentsTable;
  artifact_versions: ArtifactVersionsTable;
  artifact_shares: ArtifactSharesTable;
  artifact_uploads: ArtifactUploadsTable;
}
