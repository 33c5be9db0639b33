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

/**
 * Contents in PostgreSQL (cluster mode, migration 0017): a content's bytes are rows of
 * `blob_chunks` (1 MiB each, numbered from 0) under a `blob_id`, written while the upload
 * streams in; `blobs` names the chunk set by the content's sha256 once it is committed, and
 * `blob_staging` tracks chunk sets still being written (swept when untouched for an hour).
 */
export interface BlobsTable {
  sha256: string;
  blob_id: string;
  size_bytes: number;
  /** The size of every chunk but the last. */
  chunk_bytes: number;
  created_at: number;
}

export interface BlobChunksTable {
  blob_id: string;
  seq: number;
  bytes: Buffer;
}

export interface BlobStagingTable {
  blob_id: string;
  /** The node receiving the upload (migration 0028); its chunks are swept once it is down. Null before 0028 and for the CLI. */
  node_id: string | null;
  /** Wall-clock ms of the last chunk written. */
  touched_at: number;
}

/** Who holds an offloaded payload's artifact (a message or a run id): it goes with its last holder. */
export interface ArtifactHoldsTable {
  artifact_id: string;
  holder: string;
  created_at: number;
}

/** An artifact the server made by offloading a payload, until retention has seen it held (or deleted it). */
export interface ArtifactOffloadsTable {
  artifact_id: string;
  created_at: number;
}

/** The artifacts tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface ArtifactsTables {
  artifacts: ArtifactsTable;
  artifact_contents: ArtifactContentsTable;
  artifact_versions: ArtifactVersionsTable;
  artifact_shares: ArtifactSharesTable;
  artifact_uploads: ArtifactUploadsTable;
  artifact_holds: ArtifactHoldsTable;
  artifact_offloads: ArtifactOffloadsTable;
  blobs: BlobsTable;
  blob_chunks: BlobChunksTable;
  blob_staging: BlobStagingTable;
}
