import fs from 'node:fs';
import path from 'node:path';
import type { DatabaseHandle } from '../db/database.js';
import type { Platform } from '../platform.js';
import type { AgentGroups, EventLog, NodeRegistry, RetentionRule } from '../kernel/ports.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { FsBlobStore, type BlobStore } from './blob-store.js';
import { ChunkedBlobStore } from './chunked-blob-store.js';
import { artifactsRoutes } from './routes.js';
import { ArtifactsService } from './service.js';
import { ArtifactsStore, BlobChunksStore } from './store.js';
import type { migrateFileBlobs } from './migrate-blobs.js';

export { ArtifactsService } from './service.js';
export type { BlobStore, StagedBlob } from './blob-store.js';
export { FsBlobStore } from './blob-store.js';
export { ChunkedBlobStore } from './chunked-blob-store.js';
export { migrateFileBlobs, type BlobMigration } from './migrate-blobs.js';

/**
 * Where contents larger than the inline limit go: chunks in PostgreSQL in cluster mode (every
 * node reads them; files a single-node install kept are read until `switchboard blobs migrate`
 * moves them in; the uploads of nodes that are down are swept), files under `<data dir>/blobs`
 * on SQLite.
 */
export function blobStoreFor(platform: Pick<Platform, 'config' | 'database'>, nodes: NodeRegistry | null = null): BlobStore {
  const files = path.join(platform.config.dataDir, 'blobs');
  if (platform.database.caps.kind !== 'postgres') return new FsBlobStore(files);
  const chunks = new BlobChunksStore(platform.database.db, platform.database.caps);
  return new ChunkedBlobStore(chunks, fs.existsSync(path.join(files, 'sha256')) ? new FsBlobStore(files) : null, nodes);
}

/** What `switchboard blobs migrate` works with: the data directory's files, the database's chunks. */
export function blobMigrationFor(database: DatabaseHandle, dataDir: string): Parameters<typeof migrateFileBlobs>[0] | null {
  if (database.caps.kind !== 'postgres') return null;
  const files = path.join(dataDir, 'blobs');
  return {
    files: new FsBlobStore(files),
    chunks: new ChunkedBlobStore(new BlobChunksStore(database.db, database.caps)),
    store: new ArtifactsStore(database.db, database.caps),
  };
}

/** The settings row holding the HMAC key of signed and upload URLs (shared by every node). */
export const URL_SIGNING_SETTING = 'artifacts.url_signing_key';

/**
 * How often expired upload intents are swept. Cheap (an indexed range scan that is usually
 * empty), and short enough that an expired upload's bytes do not linger.
 */
const SWEEP_INTERVAL_MS = 1000;

/**
 * How often blob files are checked for a referencing row (the first pass runs at startup).
 * Each pass lists every blob file and looks their keys up 100 at a time; orphans are rare (a
 * crash between a rename and its commit), so a pass every half hour is plenty.
 */
const ORPHAN_SWEEP_INTERVAL_MS = 30 * 60_000;

/**
 * Artifacts: versioned, content-addressed files and JSON snippets, upload intents,
 * signed URLs and sharing. `sharedSecret` returns a cluster-wide secret by name (auth's
 * settings); `groups` (access groups: memberships an admin granted) makes group shares work;
 * `nodes` (the cluster's registry) tells the sweep whose half-received uploads are dead.
 */
export function createArtifactsDomain(deps: {
  platform: Platform;
  sharedSecret: (name: string) => Promise<string>;
  groups: AgentGroups;
  blobs?: BlobStore;
  events: EventLog;
  nodes: NodeRegistry;
}) {
  const { platform } = deps;
  const blobs = deps.blobs ?? blobStoreFor(platform, deps.nodes);
  const service = new ArtifactsService({
    store: new ArtifactsStore(platform.database.db, platform.database.caps),
    blobs,
    clock: platform.clock,
    logger: platform.logger,
    groups: deps.groups,
    events: deps.events,
    audit: platform.audit,
    signingKey: () => deps.sharedSecret(URL_SIGNING_SETTING),
    publicUrl: platform.publicUrl,
    maxUploadBytes: platform.config.maxUploadBytes,
    inlineMaxBytes: platform.config.artifactInlineBytes,
  });
  const sweeper = new LoopWorker({
    name: 'artifact-upload-sweeper',
    intervalMs: SWEEP_INTERVAL_MS,
    logger: platform.logger,
    run: async () => {
      await service.sweep();
    },
  });
  const orphanSweeper = new LoopWorker({
    name: 'artifact-orphan-blob-sweeper',
    intervalMs: ORPHAN_SWEEP_INTERVAL_MS,
    logger: platform.logger,
    run: async (signal) => {
      await service.sweepOrphanBlobs(signal);
    },
  });
  const offloads: RetentionRule = {
    name: 'payload offloads',
    async deleteExpired(now, limit) {
      const { deleted, more } = await service.claimChecks.sweepUnheld(now, limit);
      return { deleted: { payload_artifacts: deleted }, more };
    },
  };
  return {
    service,
    blobs,
    routes: artifactsRoutes(service, platform.config.maxUploadBytes),
    workers: [sweeper, orphanSweeper],
    retention: [offloads],
  };
}
