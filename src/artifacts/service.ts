import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { actingAgent, actsForPlatform, type Principal } from '../auth/index.js';
import { autocommit, type Tx } from '../db/tx.js';
import { HmacSigner } from '../kernel/hmac-signer.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound, PayloadTooLarge, PreconditionFailed } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { AgentGroups, AuditTrail, EventLog, NewEvent } from '../kernel/ports.js';
import type { BlobStore, ByteRange, StagedBlob } from './blob-store.js';
import { entityTags } from './http-conditions.js';
import {
  isContentType,
  MAX_NAME_LENGTH,
  METADATA_FILTER_LIMITS,
  type AccessList,
  type Artifact,
  type ArtifactVersion,
  type SignedUrlBody,
  type SnippetBody,
  type UploadIntentBody,
} from './schemas.js';
import type { ArtifactFilter, ArtifactRow, ArtifactsStore, UploadRow, VersionContentRow, VersionRow, Viewer } from './store.js';
import { isJsonObject, refuseUnstorable } from '../kernel/json.js';

/** One part of a multipart body, in the order the client sent them. */
export type FormPart =
  | { kind: 'field'; name: string; value: string; truncated: boolean }
  | { kind: 'file'; name: string; filename: string; mimetype: string; content: Readable | Buffer };

/** A multipart body, streamed or read whole; the HTTP layer adapts its parser to this. */
export interface IncomingForm {
  parts: AsyncIterable<FormPart>;
  /** Resolves once the whole body has been read; throws when the body is not what the request signed. */
  verify(): Promise<void>;
}

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

/** The proof a signed or upload URL carries (query `expires`, Unix seconds, and `signature`). */
export interface UrlProof {
  expires: number;
  signature: string;
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

const FORM_FIELDS = new Set(['name', 'content_type', 'metadata']);
const SNIPPET_TYPE = 'application/json';
const SWEEP_BATCH = 100;
/** Staging files untouched this long were left by a crash (a live upload writes continuously). */
const STAGING_TTL_MS = 3600_000;
/**
 * A blob file untouched for less than this is never taken for an orphan: the transaction that
 * renamed it into place may still be open (the lock each delete takes covers that already;
 * this is a margin on top of it, for a rename that takes milliseconds).
 */
const ORPHAN_GRACE_MS = 10 * 60_000;

function toArtifact(row: ArtifactRow): Artifact {
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

function toVersion(row: VersionRow): ArtifactVersion {
  return {
    version: row.version,
    content_type: row.content_type,
    size_bytes: Number(row.size_bytes),
    sha256: row.sha256,
    created_at: iso(row.created_at),
    created_by: row.created_by,
  };
}

/**
 * A JSON object given as text (a form field or a query parameter), or a 400 naming the field.
 * A NUL or an unpaired surrogate, escaped in the text, is refused: PostgreSQL's jsonb holds neither.
 */
export function parseJsonObject(text: string, field: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw InvalidRequest.field(field, 'must be valid JSON');
  }
  if (!isJsonObject(value)) throw InvalidRequest.field(field, 'must be a JSON object');
  // JSON text in a form field or the query: the shared refusal of the HTTP layer never saw it.
  refuseUnstorable(value, field);
  return value;
}

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

function checkName(name: string): string {
  if (name.length < 1 || name.length > MAX_NAME_LENGTH) {
    throw InvalidRequest.field('name', `must be 1 to ${MAX_NAME_LENGTH} characters`);
  }
  refuseUnstorable(name, 'name');
  return name;
}

/** A form's type (its `content_type` field, else its file part's own type), by the schemas' rule. */
function checkContentType(type: string): string {
  if (!isContentType(type)) {
    throw InvalidRequest.field('content_type', "must be a MIME type of printable ASCII (at most 255 characters), such as text/plain or text/plain; charset=utf-8");
  }
  return type;
}

/** What a new artifact is made of, whichever way its bytes arrived. */
interface NewArtifact {
  owner: string;
  name: string;
  content_type: string;
  metadata: Record<string, unknown>;
  sha256: string;
  size_bytes: number;
}

export class ArtifactsService {
  private readonly signer: HmacSigner;

  constructor(private readonly deps: ArtifactsDeps) {
    this.signer = new HmacSigner(deps.signingKey);
  }

  private get store(): ArtifactsStore {
    return this.deps.store;
  }

  // ---- access (design §3) ----

  private ownerOf(principal: Principal): string {
    return principal.agentId ?? principal.actor;
  }

  private async groupsOf(agentId: string | null): Promise<string[]> {
    if (agentId === null) return [];
    return this.deps.groups.groupsOf(agentId);
  }

  private async find(id: string): Promise<ArtifactRow> {
    const row = await this.store.findArtifact(autocommit, id);
    if (!row) throw new NotFound('Artifact', id);
    return row;
  }

  /**
   * The artifact, if the caller may read it: admin, owner, a shared agent or a member of a
   * shared group (a membership an admin granted, never a group the agent declared itself).
   * Every read goes through here: the HTTP routes, MCP's read_artifact and resources; the
   * event log applies the same rule to artifact events through their readers (readersOf).
   */
  private async readable(principal: Principal, id: string): Promise<ArtifactRow> {
    const row = await this.find(id);
    if (actsForPlatform(principal) || row.owner === this.ownerOf(principal)) return row;
    const agentId = principal.agentId;
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
  private async writable(principal: Principal, id: string): Promise<ArtifactRow> {
    const row = await this.find(id);
    if (actsForPlatform(principal) || row.owner === this.ownerOf(principal)) return row;
    throw new Forbidden(`Only the owner ('${row.owner}') or an admin may change artifact '${id}'`);
  }

  /** Who may read the artifact's events (design §8): its owner, the agents and the groups it is shared with. */
  private async readersOf(tx: Tx, artifact: Pick<ArtifactRow, 'id' | 'owner'>): Promise<NonNullable<NewEvent['readers']>> {
    const shares = await this.store.listShares(tx, artifact.id);
    return {
      agents: [artifact.owner, ...shares.filter((s) => s.kind === 'agent').map((s) => s.principal)],
      groups: shares.filter((s) => s.kind === 'group').map((s) => s.principal),
    };
  }

  /** A new artifact's event: only its owner reads it (it has no shares yet). */
  private async created(tx: Tx, artifact: ArtifactRow, actor: string): Promise<void> {
    await this.deps.audit.record(tx, { action: 'artifact.create', resource: { type: 'artifact', id: artifact.id } });
    await this.deps.events.append(tx, { type: 'artifact.created', subject: artifact.id, actor, data: { artifact: toArtifact(artifact) }, readers: { agents: [artifact.owner] } });
  }

  // ---- contents and their references ----

  /**
   * Streams an upload to the staging area: held in memory while it fits the inline limit, else
   * spilled to a staging file (bounded by `maxBytes` either way: 413, nothing left behind).
   */
  private stage(source: Readable | Buffer, maxBytes = this.deps.maxUploadBytes): Promise<StagedBlob> {
    return this.deps.blobs.stage(source, maxBytes, this.deps.inlineMaxBytes);
  }

  /**
   * Stores staged bytes under their sha256 inside `tx`, which holds their lock
   * (store.lockBlobs) and adds the reference: a small content as a database row, which the
   * transaction commits or rolls back with the reference; a large one by committing its file.
   */
  private async keep(tx: Tx, staged: StagedBlob): Promise<void> {
    await this.store.lockBlobs(tx, [staged.key]);
    if (staged.inline) await this.store.insertContent(tx, staged.key, staged.inline);
    else await staged.commit(tx);
  }

  /**
   * Deletes the contents no version or upload references any more, wherever they are kept (a
   * content may be in both places: a row and a file made while the inline limit was lower).
   * Call inside the transaction that dropped the references, holding their locks
   * (store.lockBlobs), so no writer can add a reference between the count and the delete.
   */
  private async dropUnreferenced(tx: Tx, sha256s: Iterable<string>): Promise<number> {
    let dropped = 0;
    for (const sha of new Set(sha256s)) {
      if ((await this.store.blobReferences(tx, sha)) > 0) continue;
      await this.store.deleteContent(tx, sha);
      await this.deps.blobs.delete(tx, sha);
      dropped++;
    }
    return dropped;
  }

  /**
   * Runs `work`, which commits `staged` inside its transaction. If it fails, the staged bytes are
   * removed, and, when the commit ran but its transaction did not, the blob is deleted unless
   * something else references it (a file renamed into place stays there through a rollback).
   */
  private async settle<T>(staged: StagedBlob, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (staged.committed) {
        await this.store
          .inTransaction(async (tx) => {
            await this.store.lockBlobs(tx, [staged.key]);
            await this.dropUnreferenced(tx, [staged.key]);
          })
          .catch((cleanupErr: unknown) => this.deps.logger.error({ err: cleanupErr, blob: staged.key }, 'could not release a blob'));
      }
      await staged.discard().catch((cleanupErr: unknown) => this.deps.logger.error({ err: cleanupErr, blob: staged.key }, 'could not discard staged bytes'));
      throw err;
    }
  }

  /** Streams the parts of a form: the one `file` to the staging area, the fields into a map. */
  private async readForm(form: IncomingForm): Promise<{ fields: Map<string, string>; staged?: StagedBlob; file?: { filename: string; mimetype: string } }> {
    const fields = new Map<string, string>();
    let staged: StagedBlob | undefined;
    let file: { filename: string; mimetype: string } | undefined;
    try {
      for await (const part of form.parts) {
        if (part.kind === 'file') {
          if (part.name !== 'file') throw InvalidRequest.field(part.name, 'is not a known field; send the content as "file"');
          if (staged) throw InvalidRequest.field('file', 'must be sent once');
          staged = await this.stage(part.content);
          file = { filename: part.filename, mimetype: part.mimetype };
          continue;
        }
        if (!FORM_FIELDS.has(part.name)) throw InvalidRequest.field(part.name, 'is not a known field');
        if (fields.has(part.name)) throw InvalidRequest.field(part.name, 'must be sent once');
        if (part.truncated) throw InvalidRequest.field(part.name, 'is too long');
        fields.set(part.name, part.value);
      }
      await form.verify();
    } catch (err) {
      await staged?.discard();
      throw err;
    }
    return { fields, staged, file };
  }

  private rowsFor(input: NewArtifact, createdBy: string, now: number): { artifact: ArtifactRow; version: VersionRow } {
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

  private async insertStaged(principal: Principal, input: Omit<NewArtifact, 'sha256' | 'size_bytes' | 'owner'>, staged: StagedBlob): Promise<Artifact> {
    const rows = this.rowsFor(
      { ...input, owner: this.ownerOf(principal), sha256: staged.sha256, size_bytes: staged.size },
      principal.actor,
      this.deps.clock.now(),
    );
    await this.store.inTransaction(async (tx) => {
      await this.keep(tx, staged);
      await this.store.insertArtifact(tx, rows.artifact, rows.version);
      await this.created(tx, rows.artifact, principal.actor);
    });
    return toArtifact(rows.artifact);
  }

  // ---- create ----

  /** POST /artifacts: a multipart form with `file` and optional name, content_type, metadata. */
  async create(principal: Principal, form: IncomingForm): Promise<Artifact> {
    const { fields, staged, file } = await this.readForm(form);
    if (!staged || !file) throw InvalidRequest.field('file', 'is required');
    return this.settle(staged, () => {
      const name = checkName(fields.get('name') ?? file.filename);
      const contentType = checkContentType(fields.get('content_type') ?? file.mimetype);
      const metadataText = fields.get('metadata');
      const metadata = metadataText === undefined ? {} : parseJsonObject(metadataText, 'metadata');
      return this.insertStaged(principal, { name, content_type: contentType, metadata }, staged);
    });
  }

  async createSnippet(principal: Principal, body: SnippetBody): Promise<Artifact> {
    const bytes = Buffer.from(JSON.stringify(body.content ?? null));
    const staged = await this.stage(bytes);
    return this.settle(staged, () =>
      this.insertStaged(principal, { name: body.name, content_type: SNIPPET_TYPE, metadata: body.metadata ?? {} }, staged),
    );
  }

  // ---- read ----

  async get(principal: Principal, id: string): Promise<Artifact> {
    return toArtifact(await this.readable(principal, id));
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
      : { admin: false, agentId: principal.agentId, groups: await this.groupsOf(principal.agentId) };
    const page = await this.store.list(autocommit, viewer, filter, window);
    return { items: page.items.map(toArtifact), total: page.total };
  }

  /** Artifacts shared with the caller (or, for an admin, with the named agent), not its own. */
  async listShared(principal: Principal, agentId: string | undefined, window: Page): Promise<Paged<Artifact>> {
    const agent = actingAgent(principal, agentId);
    const page = await this.store.listShared(autocommit, { admin: false, agentId: agent, groups: await this.groupsOf(agent) }, window);
    return { items: page.items.map(toArtifact), total: page.total };
  }

  async versions(principal: Principal, id: string): Promise<ArtifactVersion[]> {
    await this.readable(principal, id);
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
    return this.downloadOf(await this.readable(principal, id), version);
  }

  // ---- versions ----

  /**
   * PUT /artifacts/{id}: the form's file becomes version n+1 (n: the highest ever made). With
   * If-Match, only while the current version's sha256 is one of the tags: checked before the
   * body is read, and again atomically when the version is recorded (412 either way).
   */
  async update(principal: Principal, id: string, form: IncomingForm, ifMatch?: string): Promise<Artifact> {
    const current = await this.writable(principal, id);
    const tags = ifMatch === undefined ? [] : entityTags(ifMatch).map((t) => t.toLowerCase());
    const expected = tags.length === 0 || tags.includes('*') ? undefined : tags;
    const mismatch = () => new PreconditionFailed(`If-Match does not match the current version of artifact '${id}'`);
    if (expected && !expected.includes(current.sha256)) throw mismatch();
    const { fields, staged, file } = await this.readForm(form);
    if (!staged || !file) throw InvalidRequest.field('file', 'is required');
    return this.settle(staged, async () => {
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
        await this.keep(tx, staged);
        await this.store.insertVersion(tx, {
          artifact_id: id,
          version: advanced.current_version,
          content_type: content.content_type,
          size_bytes: staged.size,
          sha256: staged.sha256,
          created_by: principal.actor,
          created_at: now,
        });
        await this.deps.events.append(tx, {
          type: 'artifact.version_created',
          subject: id,
          actor: principal.actor,
          data: { artifact: toArtifact(advanced), version: advanced.current_version },
          readers: await this.readersOf(tx, advanced),
        });
        return advanced;
      });
      return toArtifact(row);
    });
  }

  /** Deletes one version (design §5): never the only one (409); the newest hands over to the previous. */
  async deleteVersion(principal: Principal, id: string, version: number): Promise<{ current_version: number }> {
    await this.writable(principal, id);
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'artifact.delete_version', resource: { type: 'artifact', id } });
      const artifact = await this.store.lockArtifact(tx, id);
      if (!artifact) throw new NotFound('Artifact', id);
      const versions = await this.store.listVersions(tx, id);
      const target = versions.find((v) => v.version === version);
      if (!target) throw new NotFound(`Version ${version} of artifact`, id);
      if (versions.length === 1) throw new Conflict(`Version ${version} is the only version of artifact '${id}'; delete the artifact instead`);
      await this.store.deleteVersion(tx, id, version);
      let current = artifact.current_version;
      if (current === version) {
        const previous = versions.find((v) => v.version !== version)!;
        await this.store.setCurrent(tx, id, previous, this.deps.clock.now());
        current = previous.version;
      }
      await this.store.lockBlobs(tx, [target.sha256]);
      await this.dropUnreferenced(tx, [target.sha256]);
      return { current_version: current };
    });
  }

  /** Deletes the artifact, its versions and shares, and every blob nothing else references. */
  async delete(principal: Principal, id: string): Promise<void> {
    await this.writable(principal, id);
    await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'artifact.delete', resource: { type: 'artifact', id } });
      const artifact = await this.store.lockArtifact(tx, id);
      if (!artifact) throw new NotFound('Artifact', id);
      const blobs = (await this.store.listVersions(tx, id)).map((v) => v.sha256);
      // Read before the shares go with the artifact.
      const readers = await this.readersOf(tx, artifact);
      await this.store.deleteArtifact(tx, id);
      await this.store.lockBlobs(tx, blobs);
      await this.dropUnreferenced(tx, blobs);
      await this.deps.events.append(tx, { type: 'artifact.deleted', subject: id, actor: principal.actor, data: { artifact: toArtifact(artifact) }, readers });
    });
  }

  // ---- signed URLs ----

  private async verify(message: string, proof: UrlProof): Promise<void> {
    if (!(await this.signer.verify(message, proof.signature))) throw new Forbidden('The URL signature is not valid');
    if (proof.expires * 1000 <= this.deps.clock.now()) throw new Forbidden('The URL has expired');
  }

  private expiry(expiresInSeconds: number): number {
    return Math.floor(this.deps.clock.now() / 1000) + expiresInSeconds;
  }

  /** A URL that downloads one version without credentials until it expires. */
  async signedUrl(principal: Principal, id: string, body: SignedUrlBody): Promise<{ url: string; expires_at: string; version: number }> {
    const artifact = await this.readable(principal, id);
    const version = (await this.versionOf(artifact, body.version)).version;
    const expires = this.expiry(body.expires_in);
    const signature = await this.signer.sign(`download\n${id}\n${version}\n${expires}`);
    const url = `${this.deps.publicUrl()}/api/v1/artifacts/signed/${encodeURIComponent(id)}/${version}?expires=${expires}&signature=${signature}`;
    return { url, expires_at: iso(expires * 1000), version };
  }

  async signedDownload(id: string, version: number, proof: UrlProof): Promise<Download> {
    await this.verify(`download\n${id}\n${version}\n${proof.expires}`, proof);
    return this.downloadOf(await this.find(id), version);
  }

  // ---- upload intents ----

  async createUpload(principal: Principal, body: UploadIntentBody): Promise<{ upload_id: string; url: string; expires_at: string }> {
    if (body.size_bytes > this.deps.maxUploadBytes) {
      throw new PayloadTooLarge(`size_bytes exceeds the upload limit of ${this.deps.maxUploadBytes} bytes`);
    }
    const now = this.deps.clock.now();
    const expires = this.expiry(body.expires_in ?? 3600);
    const row: UploadRow = {
      id: newId('upl', now),
      owner: this.ownerOf(principal),
      name: body.name,
      content_type: body.content_type,
      metadata: JSON.stringify(body.metadata ?? {}),
      size_bytes: body.size_bytes,
      sha256: body.sha256?.toLowerCase() ?? null,
      expires_at: expires * 1000,
      blob_sha256: null,
      received_bytes: null,
      created_at: now,
    };
    await this.store.insertUpload(autocommit, row);
    const signature = await this.signer.sign(`upload\n${row.id}\n${expires}`);
    const url = `${this.deps.publicUrl()}/api/v1/artifacts/uploads/${row.id}?expires=${expires}&signature=${signature}`;
    return { upload_id: row.id, url, expires_at: iso(row.expires_at) };
  }

  /**
   * The PUT to an upload URL: streams the bytes (at most the declared size) to a blob the upload
   * references until it is confirmed or swept. A second PUT replaces the first one's bytes.
   */
  async receiveUpload(uploadId: string, proof: UrlProof, body: Readable, contentLength?: number): Promise<{ upload_id: string; size_bytes: number; sha256: string }> {
    await this.verify(`upload\n${uploadId}\n${proof.expires}`, proof);
    const upload = await this.store.findUpload(autocommit, uploadId);
    if (!upload) throw new NotFound('Upload', uploadId);
    const limit = Math.min(this.deps.maxUploadBytes, Number(upload.size_bytes));
    if (contentLength !== undefined && contentLength > limit) {
      throw new PayloadTooLarge(`The upload declared ${upload.size_bytes} bytes; this body has ${contentLength}`);
    }
    const staged = await this.stage(body, limit);
    return this.settle(staged, async () => {
      await this.store.inTransaction(async (tx) => {
        const before = await this.store.lockUpload(tx, uploadId);
        if (!before) throw new NotFound('Upload', uploadId);
        const previous = before.blob_sha256;
        // Both locks at once, in sorted order (store.lockBlobs), so two replacements cannot deadlock.
        if (previous !== null) await this.store.lockBlobs(tx, [staged.key, previous]);
        await this.keep(tx, staged);
        await this.store.recordUploadBytes(tx, uploadId, staged.sha256, staged.size);
        if (previous !== null && previous !== staged.key) await this.dropUnreferenced(tx, [previous]);
      });
      return { upload_id: uploadId, size_bytes: staged.size, sha256: staged.sha256 };
    });
  }

  /** Creates the artifact from the uploaded bytes if they match the declared size (and sha256); else 409, bytes discarded. */
  async confirmUpload(principal: Principal, uploadId: string): Promise<Artifact> {
    const outcome = await this.store.inTransaction(async (tx): Promise<{ artifact: ArtifactRow } | { problems: { field: string; message: string }[] }> => {
      const upload = await this.store.lockUpload(tx, uploadId);
      if (!upload) throw new NotFound('Upload', uploadId);
      if (!actsForPlatform(principal) && upload.owner !== this.ownerOf(principal)) {
        throw new Forbidden(`Upload '${uploadId}' belongs to '${upload.owner}'`);
      }
      if (upload.expires_at <= this.deps.clock.now()) throw new Conflict(`Upload '${uploadId}' has expired`);
      const blob = upload.blob_sha256;
      if (blob === null) throw new Conflict('No bytes have been uploaded yet: PUT them to the upload URL first');
      await this.store.lockBlobs(tx, [blob]);
      await this.store.deleteUpload(tx, uploadId);
      const problems: { field: string; message: string }[] = [];
      if (Number(upload.received_bytes) !== Number(upload.size_bytes)) {
        problems.push({ field: 'size_bytes', message: `declared ${upload.size_bytes}, received ${upload.received_bytes}` });
      }
      if (upload.sha256 !== null && upload.sha256 !== blob) {
        problems.push({ field: 'sha256', message: `declared ${upload.sha256}, received ${blob}` });
      }
      if (problems.length > 0) {
        await this.dropUnreferenced(tx, [blob]);
        return { problems };
      }
      const rows = this.rowsFor(
        {
          owner: upload.owner,
          name: upload.name,
          content_type: upload.content_type,
          metadata: JSON.parse(upload.metadata) as Record<string, unknown>,
          sha256: blob,
          size_bytes: Number(upload.received_bytes),
        },
        principal.actor,
        this.deps.clock.now(),
      );
      await this.store.insertArtifact(tx, rows.artifact, rows.version);
      await this.created(tx, rows.artifact, principal.actor);
      return { artifact: rows.artifact };
    });
    if ('problems' in outcome) {
      throw new Conflict('The uploaded bytes do not match the upload declaration; they have been discarded', outcome.problems);
    }
    return toArtifact(outcome.artifact);
  }

  /** Removes expired uploads and their bytes, and staging files left by a crash. */
  async sweep(): Promise<number> {
    const now = this.deps.clock.now();
    let swept = 0;
    for (;;) {
      const n = await this.store.inTransaction(async (tx) => {
        const expired = await this.store.claimExpiredUploads(tx, now, SWEEP_BATCH);
        const blobs = expired.map((u) => u.blob_sha256).filter((b): b is string => b !== null);
        await this.store.lockBlobs(tx, blobs);
        await this.dropUnreferenced(tx, blobs);
        return expired.length;
      });
      swept += n;
      if (n < SWEEP_BATCH) break;
    }
    await this.deps.blobs.sweepStaging(STAGING_TTL_MS);
    return swept;
  }

  /**
   * Deletes the blob files no version or upload references. A crash between a file's rename
   * into place and the commit of the transaction that references it leaves one (seen on
   * PostgreSQL after SIGKILLs under load). Only files untouched for the grace period are
   * looked at, and each is deleted under its lock after its references are counted again, as
   * every delete is, so an upload in flight keeps its file. Stops between batches once `signal`
   * is aborted (a shutdown does not wait for a pass over every file).
   */
  async sweepOrphanBlobs(signal?: AbortSignal): Promise<number> {
    let swept = 0;
    let batch: string[] = [];
    const sweepBatch = async () => {
      const referenced = await this.store.referencedBlobs(autocommit, batch);
      for (const sha of batch.filter((key) => !referenced.has(key))) {
        swept += await this.store.inTransaction(async (tx) => {
          await this.store.lockBlobs(tx, [sha]);
          return this.dropUnreferenced(tx, [sha]);
        });
      }
      batch = [];
    };
    for await (const sha of this.deps.blobs.storedBefore(ORPHAN_GRACE_MS)) {
      batch.push(sha);
      if (batch.length < SWEEP_BATCH) continue;
      await sweepBatch();
      if (signal?.aborted) break;
    }
    await sweepBatch();
    if (swept > 0) this.deps.logger.info({ blobs: swept }, 'deleted blob files that nothing referenced');
    return swept;
  }

  // ---- sharing ----

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
