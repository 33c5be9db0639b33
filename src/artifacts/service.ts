import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { actingAgent, actsForPlatform, type Principal } from '../auth/index.js';
import { autocommit } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, InvalidRequest, NotFound, PreconditionFailed } from '../kernel/errors.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AgentGroups, AuditTrail, EventLog } from '../kernel/ports.js';
import { ArtifactAccess } from './access.js';
import { ArtifactEvents } from './artifact-events.js';
import { newArtifactRows, toArtifact, toVersion, type NewArtifact } from './artifact-rows.js';
import type { BlobStore, ByteRange, StagedBlob } from './blob-store.js';
import { ClaimCheckArtifacts } from './claim-checks.js';
import { ArtifactContents } from './contents.js';
import { checkContentType, checkName, parseJsonObject, readForm, type IncomingForm } from './forms.js';
import { entityTags } from './http-conditions.js';
import type { ArtifactFilter, Viewer } from './listing-store.js';
import {
  METADATA_FILTER_LIMITS,
  type AccessList,
  type Artifact,
  type ArtifactVersion,
  type SignedUrlBody,
  type SnippetBody,
  type UploadIntentBody,
} from './schemas.js';
import { SignedUrls, type UrlProof } from './signed-urls.js';
import type { ArtifactRow, ArtifactsStore, VersionContentRow, VersionRow } from './store.js';
import { UploadIntents } from './uploads.js';

/** A version ready to stream: what the HTTP layer needs for headers, and the bytes. */
export interface Download {
  artifact_id: string;
  version: number;
  name: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  /** The bytes (or a range of them): whole in memory when the database holds them, else streamed from the blob store. */
  open(range?: ByteRange): Promise<Readable | Buffer>;
}

export interface ArtifactsDeps {
  store: ArtifactsStore;
  blobs: BlobStore;
  clock: Clock;
  logger: Logger;
  /** The groups an admin granted an agent (access groups): members read what is shared with the group. */
  groups: AgentGroups;
  /** artifact.created, artifact.version_created, artifact.deleted: read by those who may read the artifact. */
  events: EventLog;
  audit: AuditTrail;
  /** The HMAC key of signed and upload URLs, the same on every node. */
  signingKey: () => Promise<string>;
  publicUrl: () => string;
  maxUploadBytes: number;
  /** Contents of at most this many bytes are kept in the database, larger ones in the blob store. */
  inlineMaxBytes: number;
}

const SNIPPET_TYPE = 'application/json';

/** A 400 naming the first part of a metadata filter past METADATA_FILTER_LIMITS (field `metadata.<path>`). */
export function checkMetadataFilter(filter: Record<string, unknown>, field = 'metadata'): void {
  const limits = METADATA_FILTER_LIMITS;
  let values = 0;
  const walk = (value: unknown, path: string, depth: number): void => {
    if (value === null || typeof value !== 'object') return;
    if (depth > limits.depth) throw InvalidRequest.field(path, `nests deeper than ${limits.depth} levels of objects and arrays`);
    const entries: [string, unknown][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    if (Array.isArray(value) && value.length > limits.elements) {
      throw InvalidRequest.field(path, `has ${value.length} elements; a filter's arrays hold at most ${limits.elements}`);
    }
    if (!Array.isArray(value) && entries.length > limits.keys) {
      throw InvalidRequest.field(path, `has ${entries.length} keys; a filter's objects hold at most ${limits.keys}`);
    }
    values += entries.length;
    if (values > limits.values) throw InvalidRequest.field(field, `holds more than ${limits.values} keys and elements in all`);
    for (const [key, child] of entries) walk(child, `${path}.${key}`, depth + 1);
  };
  walk(filter, field, 1);
}

/**
 * Artifacts: versioned, content-addressed files and JSON snippets. This class is the domain's
 * one door (routes, MCP, the sweep workers): it creates, reads, versions and deletes artifacts,
 * and hands the rest to its parts: access.ts (who may read or change one, and its shares),
 * contents.ts (where the bytes are kept and when they go), uploads.ts (upload intents),
 * signed-urls.ts, artifact-events.ts (the events and their readers) and forms.ts (a form's parts).
 */
export class ArtifactsService {
  private readonly accessControl: ArtifactAccess;
  private readonly contents: ArtifactContents;
  private readonly events: ArtifactEvents;
  private readonly urls: SignedUrls;
  private readonly uploads: UploadIntents;
  /** Large payloads by reference (the ClaimChecks port messaging and coordination use). */
  readonly claimChecks: ClaimCheckArtifacts;

  constructor(private readonly deps: ArtifactsDeps) {
    this.accessControl = new ArtifactAccess(deps);
    this.contents = new ArtifactContents(deps);
    this.events = new ArtifactEvents(deps);
    this.urls = new SignedUrls(deps);
    this.uploads = new UploadIntents({
      store: deps.store,
      clock: deps.clock,
      maxUploadBytes: deps.maxUploadBytes,
      access: this.accessControl,
      contents: this.contents,
      events: this.events,
      urls: this.urls,
    });
    this.claimChecks = new ClaimCheckArtifacts({
      store: deps.store,
      holds: deps.store.holds,
      clock: deps.clock,
      access: this.accessControl,
      contents: this.contents,
      events: this.events,
      urls: this.urls,
    });
  }

  private get store(): ArtifactsStore {
    return this.deps.store;
  }

  // ---- create ----

  private async insertStaged(
    principal: Principal,
    input: Omit<NewArtifact, 'sha256' | 'size_bytes' | 'owner'>,
    staged: StagedBlob,
  ): Promise<Artifact> {
    const rows = newArtifactRows(
      { ...input, owner: this.accessControl.ownerOf(principal), sha256: staged.sha256, size_bytes: staged.size },
      principal.actor,
      this.deps.clock.now(),
    );
    await this.store.inTransaction(async (tx) => {
      await this.contents.keep(tx, staged);
      await this.store.insertArtifact(tx, rows.artifact, rows.version);
      await this.events.created(tx, rows.artifact, principal.actor);
    });
    return toArtifact(rows.artifact);
  }

  /** POST /artifacts: a multipart form with `file` and optional name, content_type, metadata. */
  async create(principal: Principal, form: IncomingForm): Promise<Artifact> {
    const { fields, staged, file } = await readForm(form, (content) => this.contents.stage(content));
    if (!staged || !file) throw InvalidRequest.field('file', 'is required');
    return this.contents.settle(staged, () => {
      const name = checkName(fields.get('name') ?? file.filename);
      const contentType = checkContentType(fields.get('content_type') ?? file.mimetype);
      const metadataText = fields.get('metadata');
      const metadata = metadataText === undefined ? {} : parseJsonObject(metadataText, 'metadata');
      return this.insertStaged(principal, { name, content_type: contentType, metadata }, staged);
    });
  }

  async createSnippet(principal: Principal, body: SnippetBody): Promise<Artifact> {
    const bytes = Buffer.from(JSON.stringify(body.content ?? null));
    const staged = await this.contents.stage(bytes);
    return this.contents.settle(staged, () =>
      this.insertStaged(principal, { name: body.name, content_type: SNIPPET_TYPE, metadata: body.metadata ?? {} }, staged),
    );
  }

  // ---- read ----

  async get(principal: Principal, id: string): Promise<Artifact> {
    return toArtifact(await this.accessControl.readable(principal, id));
  }

  async list(principal: Principal, query: { content_type?: string; metadata?: string }, window: Page): Promise<Paged<Artifact>> {
    const filter: ArtifactFilter = {};
    if (query.content_type !== undefined) filter.content_type = query.content_type;
    if (query.metadata !== undefined) {
      filter.metadata = parseJsonObject(query.metadata, 'metadata');
      checkMetadataFilter(filter.metadata);
    }
    const viewer: Viewer = actsForPlatform(principal)
      ? { admin: true, agentId: principal.agentId, groups: [] }
      : { admin: false, agentId: principal.agentId, groups: await this.accessControl.groupsOf(principal.agentId) };
    const page = await this.store.listing.list(autocommit, viewer, filter, window);
    return mapPage(page, toArtifact);
  }

  /** Artifacts shared with the caller (or, for an admin, with the named agent), not its own. */
  async listShared(principal: Principal, agentId: string | undefined, window: Page): Promise<Paged<Artifact>> {
    const agent = actingAgent(principal, agentId);
    const page = await this.store.listing.listShared(
      autocommit,
      { admin: false, agentId: agent, groups: await this.accessControl.groupsOf(agent) },
      window,
    );
    return mapPage(page, toArtifact);
  }

  async versions(principal: Principal, id: string): Promise<ArtifactVersion[]> {
    await this.accessControl.readable(principal, id);
    return (await this.store.listVersions(autocommit, id)).map(toVersion);
  }

  private async versionOf(artifact: ArtifactRow, version: number | undefined): Promise<VersionRow> {
    const wanted = version ?? artifact.current_version;
    const row = await this.store.findVersion(autocommit, artifact.id, wanted);
    if (!row) throw new NotFound(`Version ${wanted} of artifact`, artifact.id);
    return row;
  }

  /** A version ready to download (default: the current one). */
  private async downloadOf(artifact: ArtifactRow, version: number | undefined): Promise<Download> {
    const wanted = version ?? artifact.current_version;
    const row = await this.store.findVersionContent(autocommit, artifact.id, wanted);
    if (!row) throw new NotFound(`Version ${wanted} of artifact`, artifact.id);
    return this.toDownload(artifact, row);
  }

  private toDownload(artifact: ArtifactRow, version: VersionContentRow): Download {
    const blobs = this.deps.blobs;
    const inline = version.bytes;
    return {
      artifact_id: artifact.id,
      version: version.version,
      name: artifact.name,
      content_type: version.content_type,
      size_bytes: Number(version.size_bytes),
      sha256: version.sha256,
      async open(range) {
        if (inline !== null) return range ? inline.subarray(range.start, range.end + 1) : inline;
        try {
          return await blobs.get(version.sha256, range);
        } catch (err) {
          // Deleted between the lookup and the open.
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFound(`Version ${version.version} of artifact`, artifact.id);
          throw err;
        }
      },
    };
  }

  async download(principal: Principal, id: string, version?: number): Promise<Download> {
    return this.downloadOf(await this.accessControl.readable(principal, id), version);
  }

  // ---- versions ----

  /**
   * PUT /artifacts/{id}: the form's file becomes version n+1 (n: the highest ever made). With
   * If-Match, only while the current version's sha256 is one of the tags: checked before the
   * body is read, and again atomically when the version is recorded (412 either way).
   */
  async update(principal: Principal, id: string, form: IncomingForm, ifMatch?: string): Promise<Artifact> {
    const current = await this.accessControl.writable(principal, id);
    const tags = ifMatch === undefined ? [] : entityTags(ifMatch).map((t) => t.toLowerCase());
    const expected = tags.length === 0 || tags.includes('*') ? undefined : tags;
    const mismatch = () => new PreconditionFailed(`If-Match does not match the current version of artifact '${id}'`);
    if (expected && !expected.includes(current.sha256)) throw mismatch();
    const { fields, staged, file } = await readForm(form, (content) => this.contents.stage(content));
    if (!staged || !file) throw InvalidRequest.field('file', 'is required');
    return this.contents.settle(staged, async () => {
      const name = fields.get('name');
      const metadataText = fields.get('metadata');
      const now = this.deps.clock.now();
      const content = {
        content_type: checkContentType(fields.get('content_type') ?? file.mimetype),
        size_bytes: staged.size,
        sha256: staged.sha256,
        updated_at: now,
        ...(name === undefined ? {} : { name: checkName(name) }),
        ...(metadataText === undefined ? {} : { metadata: JSON.stringify(parseJsonObject(metadataText, 'metadata')) }),
      };
      const row = await this.store.inTransaction(async (tx) => {
        await this.deps.audit.record(tx, { action: 'artifact.update', resource: { type: 'artifact', id } });
        const advanced = await this.store.advanceVersion(tx, id, content, expected);
        if (!advanced) {
          if (await this.store.findArtifact(tx, id)) throw mismatch();
          throw new NotFound('Artifact', id);
        }
        await this.contents.keep(tx, staged);
        await this.store.insertVersion(tx, {
          artifact_id: id,
          version: advanced.current_version,
          content_type: content.content_type,
          size_bytes: staged.size,
          sha256: staged.sha256,
          created_by: principal.actor,
          created_at: now,
        });
        await this.events.versionCreated(tx, advanced, principal.actor);
        return advanced;
      });
      return toArtifact(row);
    });
  }

  /** Deletes one version, never the only one (409: an artifact always has a current version); the newest hands over to the previous. */
  async deleteVersion(principal: Principal, id: string, version: number): Promise<{ current_version: number }> {
    await this.accessControl.writable(principal, id);
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'artifact.delete_version', resource: { type: 'artifact', id } });
      const artifact = await this.store.lockArtifact(tx, id);
      if (!artifact) throw new NotFound('Artifact', id);
      const versions = await this.store.listVersions(tx, id);
      const target = versions.find((v) => v.version === version);
      if (!target) throw new NotFound(`Version ${version} of artifact`, id);
      if (versions.length === 1)
        throw new Conflict(`Version ${version} is the only version of artifact '${id}'; delete the artifact instead`);
      await this.store.deleteVersion(tx, id, version);
      let current = artifact.current_version;
      if (current === version) {
        const previous = versions.find((v) => v.version !== version)!;
        await this.store.setCurrent(tx, id, previous, this.deps.clock.now());
        current = previous.version;
      }
      await this.store.lockBlobs(tx, [target.sha256]);
      await this.contents.dropUnreferenced(tx, [target.sha256]);
      return { current_version: current };
    });
  }

  /** Deletes the artifact, its versions and shares, and every blob nothing else references. */
  async delete(principal: Principal, id: string): Promise<void> {
    await this.accessControl.writable(principal, id);
    await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'artifact.delete', resource: { type: 'artifact', id } });
      const artifact = await this.store.lockArtifact(tx, id);
      if (!artifact) throw new NotFound('Artifact', id);
      const blobs = (await this.store.listVersions(tx, id)).map((v) => v.sha256);
      // Read before the shares go with the artifact.
      const readers = await this.events.readersOf(tx, artifact);
      await this.store.deleteArtifact(tx, id);
      await this.store.lockBlobs(tx, blobs);
      await this.contents.dropUnreferenced(tx, blobs);
      await this.events.deleted(tx, artifact, readers, principal.actor);
    });
  }

  // ---- signed URLs ----

  /** A URL that downloads one version without credentials until it expires. */
  async signedUrl(principal: Principal, id: string, body: SignedUrlBody): Promise<{ url: string; expires_at: string; version: number }> {
    const artifact = await this.accessControl.readable(principal, id);
    const version = (await this.versionOf(artifact, body.version)).version;
    const expires = this.urls.expiry(body.expires_in);
    const url = await this.urls.downloadUrl(id, version, expires);
    return { url, expires_at: iso(expires * 1000), version };
  }

  async signedDownload(id: string, version: number, proof: UrlProof): Promise<Download> {
    await this.urls.checkDownload(id, version, proof);
    return this.downloadOf(await this.accessControl.find(id), version);
  }

  // ---- the parts' doors ----

  createUpload(principal: Principal, body: UploadIntentBody): Promise<{ upload_id: string; url: string; expires_at: string }> {
    return this.uploads.create(principal, body);
  }

  receiveUpload(
    uploadId: string,
    proof: UrlProof,
    body: Readable,
    contentLength?: number,
  ): Promise<{ upload_id: string; size_bytes: number; sha256: string }> {
    return this.uploads.receive(uploadId, proof, body, contentLength);
  }

  confirmUpload(principal: Principal, uploadId: string): Promise<Artifact> {
    return this.uploads.confirm(principal, uploadId);
  }

  access(principal: Principal, id: string): Promise<AccessList> {
    return this.accessControl.access(principal, id);
  }

  share(principal: Principal, id: string, body: { with_agents?: string[]; with_groups?: string[] }): Promise<AccessList> {
    return this.accessControl.share(principal, id, body);
  }

  unshare(principal: Principal, id: string, body: { agents?: string[]; groups?: string[] }): Promise<AccessList> {
    return this.accessControl.unshare(principal, id, body);
  }

  /** The upload sweeper's pass: expired uploads and their bytes, then staging files left by a crash. */
  async sweep(): Promise<number> {
    const swept = await this.uploads.sweepExpired();
    await this.contents.sweepStaging();
    return swept;
  }

  /** The orphan sweeper's pass (ArtifactContents.sweepOrphanBlobs). */
  sweepOrphanBlobs(signal?: AbortSignal): Promise<number> {
    return this.contents.sweepOrphanBlobs(signal);
  }
}
