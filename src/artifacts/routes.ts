import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { malformedForm, parseFormWithBusboy, parseSmallForm, type FormLimits } from '../http/multipart.js';
import { created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page } from '../http/schemas.js';
import { RangeNotSatisfiable, Unauthorized, UnsupportedMediaType } from '../kernel/errors.js';
import { sha256Hex } from '../kernel/sha256.js';
import type { FormPart, IncomingForm } from './forms.js';
import { contentDisposition, decideRange, tagMatches } from './http-conditions.js';
import {
  AccessList,
  Artifact,
  ArtifactParams,
  DownloadQuery,
  ListQuery,
  ShareBody,
  SharedQuery,
  SignatureQuery,
  SignedUrl,
  SignedUrlBody,
  SnippetBody,
  UnshareBody,
  UploadIntent,
  UploadIntentBody,
  UploadParams,
  UploadReceived,
  VersionDeleted,
  VersionList,
  VersionParams,
} from './schemas.js';
import type { ArtifactsService, Download } from './service.js';

const tags = ['artifacts'];

/** Form fields are small (metadata is the largest); the file is bounded by the upload limit. */
const FIELD_LIMIT_BYTES = 64 * 1024;

const FORM_DESCRIPTION =
  'multipart/form-data with the part `file` (the content) and the optional fields `name` (default: the file name), ' +
  "`content_type` (default: the file part's type) and `metadata` (a JSON object as text). A form of up to 128 KiB is " +
  'read whole, a larger one streamed to storage (up to SWITCHBOARD_ARTIFACT_INLINE_BYTES kept in the database, larger ones in a file); over ' +
  'SWITCHBOARD_MAX_UPLOAD_BYTES the request ends with 413 and nothing is kept. Signed requests send ' +
  'X-Content-SHA256: hex SHA-256 of the raw multipart body.';

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Bounds of every form; the file's size is the blob store's to check. */
const FORM_LIMITS: FormLimits = { files: 1, fields: 10, parts: 12, fieldSize: FIELD_LIMIT_BYTES };

/** Forms up to this size (by Content-Length) are read whole and parsed in one pass. */
const SMALL_FORM_BYTES = 128 * 1024;

/** The service's form from a multipart request: read whole when small, else streamed. */
function incomingForm(request: FastifyRequest, maxUploadBytes: number): IncomingForm {
  if (!request.isMultipart()) throw new UnsupportedMediaType('This endpoint takes multipart/form-data');
  return Number(request.headers['content-length']) <= SMALL_FORM_BYTES ? wholeForm(request) : streamedForm(request, maxUploadBytes);
}

/** A signed request's body must be the one whose SHA-256 its signature covered (X-Content-SHA256). */
function checkDeclaredHash(request: FastifyRequest, sha256: string): void {
  if (header(request, 'x-content-sha256')?.toLowerCase() !== sha256) {
    throw new Unauthorized('X-Content-SHA256 does not match the request body');
  }
}

function wholeForm(request: FastifyRequest): IncomingForm {
  let body: Buffer | undefined;
  return {
    parts: (async function* (): AsyncGenerator<FormPart> {
      body = await readWhole(request.raw);
      const small = parseSmallForm(body, header(request, 'content-type') ?? '', FORM_LIMITS);
      yield* small ?? (await parseFormWithBusboy(body, request.headers, FORM_LIMITS));
    })(),
    async verify() {
      if (request.signedBy) checkDeclaredHash(request, sha256Hex(body!));
    },
  };
}

/**
 * The request's bytes as one Buffer. Not node:stream/consumers' buffer(): it collects through a
 * Blob, whose transfer plumbing cost ~8% of a 4 KiB create's CPU (profiled).
 */
function readWhole(source: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    source.on('data', (chunk: Buffer) => chunks.push(chunk));
    source.once('end', () => {
      ended = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    source.once('error', reject);
    // A request closes after its end too; an Error (and its stack) only when it did not end.
    source.once('close', () => ended || reject(new Error('The request ended before its last byte')));
  });
}

/**
 * Adapts @fastify/multipart to the service's streamed form. A signed request's body is hashed
 * as it is parsed.
 */
function streamedForm(request: FastifyRequest, maxUploadBytes: number): IncomingForm {
  const digest = request.signedBy ? createHash('sha256') : null;
  const raw = request.raw;
  return {
    parts: (async function* (): AsyncGenerator<FormPart> {
      // Tapped in the same tick as the parser is piped (below), so neither misses a chunk.
      if (digest) raw.on('data', (chunk: Buffer) => digest.update(chunk));
      // One byte over the limit lets the blob store see the excess and answer 413 itself.
      const limits = { ...FORM_LIMITS, fileSize: maxUploadBytes + 1 };
      try {
        for await (const part of request.parts({ limits })) {
          if (part.type === 'file') {
            yield { kind: 'file', name: part.fieldname, filename: part.filename, mimetype: part.mimetype, content: part.file };
          } else {
            const value = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
            yield { kind: 'field', name: part.fieldname, value, truncated: part.valueTruncated };
          }
        }
      } catch (err) {
        // busboy's own refusals ("Multipart: Boundary not found") are the client's errors.
        throw err instanceof Error && err.message.startsWith('Multipart:') ? malformedForm(err) : err;
      }
    })(),
    async verify() {
      if (!digest) return;
      if (!raw.readableEnded) {
        raw.resume();
        await finished(raw);
      }
      checkDeclaredHash(request, digest.digest('hex'));
    },
  };
}

/** What Node lets a header value hold (tab, printable ASCII, Latin-1). */
const HEADER_TEXT = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Streams a version with its validators: ETag (the sha256), If-None-Match → 304, Range → 206/416. */
async function sendDownload(request: FastifyRequest, reply: FastifyReply, download: Download) {
  reply
    .header('ETag', `"${download.sha256}"`)
    .header('Accept-Ranges', 'bytes')
    .header('Content-Disposition', contentDisposition(download.name))
    .header('X-Artifact-Version', String(download.version));
  if (tagMatches(header(request, 'if-none-match'), download.sha256)) return reply.code(304).send();
  const decision = decideRange(header(request, 'range'), download.size_bytes);
  if (decision.kind === 'unsatisfiable') throw new RangeNotSatisfiable(download.size_bytes);
  // A type stored before types were checked as header text would make the header throw.
  reply.type(HEADER_TEXT.test(download.content_type) ? download.content_type : 'application/octet-stream');
  if (decision.kind === 'partial') {
    const { start, end } = decision.range;
    const body = await download.open(decision.range);
    return reply
      .code(206)
      .header('Content-Range', `bytes ${start}-${end}/${download.size_bytes}`)
      .header('Content-Length', String(end - start + 1))
      .send(body);
  }
  const body = await download.open();
  return reply.code(200).header('Content-Length', String(download.size_bytes)).send(body);
}

const ArtifactResponse = DataEnvelope(Artifact);

/** When a content write answers 409: in cluster mode, a node taken for down has the bytes it was receiving swept. */
const DISCARDED =
  'The bytes were discarded while they were received (cluster mode: the receiving node was taken for down); send them again';

export function artifactsRoutes(service: ArtifactsService, maxUploadBytes: number): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Registered here only: multipart parsing is this plugin's business.
    await app.register(multipart);
    // Upload URLs take the raw bytes whatever their type (a browser sends a .txt as text/plain),
    // as a stream for the blob store: in their own context, without the server's parsers, which
    // would read a JSON or text body whole (within the 1 MiB JSON limit) before the route could.
    await app.register(async (context) => {
      const uploads = context.withTypeProvider<TypeBoxTypeProvider>();
      uploads.removeAllContentTypeParsers();
      uploads.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
      uploads.put(
        '/artifacts/uploads/:upload_id',
        {
          config: { public: true, conflict: DISCARDED },
          schema: {
            tags,
            summary: 'PUT the raw bytes of an upload, whatever their Content-Type (the signed URL from upload-url; no credentials)',
            params: UploadParams,
            querystring: SignatureQuery,
            response: { 200: DataEnvelope(UploadReceived) },
          },
        },
        async (request, reply) => {
          const length = header(request, 'content-length');
          const declared = length === undefined ? undefined : Number(length);
          return ok(reply, await service.receiveUpload(request.params.upload_id, request.query, request.raw, declared));
        },
      );
    });

    app.post(
      '/artifacts',
      {
        config: { permission: 'artifacts:write', verifiesBodyHash: true, conflict: DISCARDED },
        schema: {
          tags,
          summary: 'Upload a file as a new artifact (multipart)',
          description: FORM_DESCRIPTION,
          consumes: ['multipart/form-data'],
          response: { 201: ArtifactResponse },
        },
      },
      async (request, reply) => created(reply, await service.create(request.principal, incomingForm(request, maxUploadBytes))),
    );

    app.post(
      '/artifacts/snippets',
      {
        config: { permission: 'artifacts:write', conflict: DISCARDED },
        schema: {
          tags,
          summary: 'Store a JSON value as an artifact (application/json)',
          body: SnippetBody,
          response: { 201: ArtifactResponse },
        },
      },
      async (request, reply) => created(reply, await service.createSnippet(request.principal, request.body)),
    );

    app.post(
      '/artifacts/upload-url',
      {
        config: { permission: 'artifacts:write' },
        schema: {
          tags,
          summary: 'Start a large upload: returns a URL to PUT the raw bytes to, without credentials',
          body: UploadIntentBody,
          response: { 201: DataEnvelope(UploadIntent) },
        },
      },
      async (request, reply) => created(reply, await service.createUpload(request.principal, request.body)),
    );

    app.post(
      '/artifacts/upload-url/:upload_id/confirm',
      {
        config: {
          permission: 'artifacts:write',
          conflict: `The upload has expired, has no bytes yet, or its bytes do not match its declaration (\`error.details\` lists how). ${DISCARDED}`,
        },
        schema: {
          tags,
          summary: 'Create the artifact from uploaded bytes (409 and discarded when size or sha256 differ)',
          params: UploadParams,
          response: { 201: ArtifactResponse },
        },
      },
      async (request, reply) => created(reply, await service.confirmUpload(request.principal, request.params.upload_id)),
    );

    app.get(
      '/artifacts',
      {
        config: { permission: 'artifacts:read' },
        schema: {
          tags,
          summary: 'List the artifacts the caller may read, by content type (exact or type/*) and metadata (JSON containment)',
          querystring: ListQuery,
          response: { 200: ListEnvelope(Artifact) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.list(request.principal, request.query, window), window);
      },
    );

    app.get(
      '/artifacts/shared',
      {
        config: { permission: 'artifacts:read' },
        schema: {
          tags,
          summary: 'List artifacts shared with the caller, directly or through a group an admin made it a member of',
          querystring: SharedQuery,
          response: { 200: ListEnvelope(Artifact) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listShared(request.principal, request.query.agent_id, window), window);
      },
    );

    app.get(
      '/artifacts/:artifact_id',
      {
        config: { permission: 'artifacts:read' },
        schema: { tags, summary: 'Get artifact metadata', params: ArtifactParams, response: { 200: ArtifactResponse } },
      },
      async (request, reply) => ok(reply, await service.get(request.principal, request.params.artifact_id)),
    );

    app.get(
      '/artifacts/:artifact_id/download',
      {
        config: { permission: 'artifacts:read' },
        schema: {
          tags,
          summary: 'Download a version (default: current), with ETag, Range and If-None-Match',
          params: ArtifactParams,
          querystring: DownloadQuery,
        },
      },
      async (request, reply) =>
        sendDownload(request, reply, await service.download(request.principal, request.params.artifact_id, request.query.version)),
    );

    app.get(
      '/artifacts/signed/:artifact_id/:version',
      {
        config: { public: true },
        schema: {
          tags,
          summary: 'Download through a signed URL (no credentials; 403 once expired)',
          params: VersionParams,
          querystring: SignatureQuery,
        },
      },
      async (request, reply) =>
        sendDownload(request, reply, await service.signedDownload(request.params.artifact_id, request.params.version, request.query)),
    );

    app.post(
      '/artifacts/:artifact_id/signed-url',
      {
        config: { permission: 'artifacts:read' },
        schema: {
          tags,
          summary: 'Create a URL that downloads one version without credentials until it expires',
          params: ArtifactParams,
          body: SignedUrlBody,
          response: { 201: DataEnvelope(SignedUrl) },
        },
      },
      async (request, reply) => created(reply, await service.signedUrl(request.principal, request.params.artifact_id, request.body)),
    );

    app.put(
      '/artifacts/:artifact_id',
      {
        config: { permission: 'artifacts:write', verifiesBodyHash: true, conflict: DISCARDED },
        schema: {
          tags,
          summary: 'Upload a new version (multipart); If-Match: <sha256> makes it conditional (412)',
          description: FORM_DESCRIPTION,
          consumes: ['multipart/form-data'],
          params: ArtifactParams,
          response: { 200: ArtifactResponse },
        },
      },
      async (request, reply) =>
        ok(
          reply,
          await service.update(
            request.principal,
            request.params.artifact_id,
            incomingForm(request, maxUploadBytes),
            header(request, 'if-match'),
          ),
        ),
    );

    app.get(
      '/artifacts/:artifact_id/versions',
      {
        config: { permission: 'artifacts:read' },
        schema: { tags, summary: 'List versions, newest first', params: ArtifactParams, response: { 200: DataEnvelope(VersionList) } },
      },
      async (request, reply) => ok(reply, { versions: await service.versions(request.principal, request.params.artifact_id) }),
    );

    app.delete(
      '/artifacts/:artifact_id/versions/:version',
      {
        config: { permission: 'artifacts:write', conflict: 'The version is the only one: delete the artifact instead' },
        schema: {
          tags,
          summary: 'Delete a version (409 for the only one; deleting the newest makes the previous current)',
          params: VersionParams,
          response: { 200: DataEnvelope(VersionDeleted) },
        },
      },
      async (request, reply) => {
        const { artifact_id: id, version } = request.params;
        const { current_version } = await service.deleteVersion(request.principal, id, version);
        return ok(reply, { id, version, deleted: true as const, current_version });
      },
    );

    app.post(
      '/artifacts/:artifact_id/share',
      {
        config: { permission: 'artifacts:write' },
        schema: {
          tags,
          summary: 'Share with agents and access groups (owner or admin); a group share opens to the members an admin granted',
          params: ArtifactParams,
          body: ShareBody,
          response: { 200: DataEnvelope(AccessList) },
        },
      },
      async (request, reply) => ok(reply, await service.share(request.principal, request.params.artifact_id, request.body)),
    );

    app.post(
      '/artifacts/:artifact_id/unshare',
      {
        config: { permission: 'artifacts:write' },
        schema: {
          tags,
          summary: 'Withdraw shares (owner or admin)',
          params: ArtifactParams,
          body: UnshareBody,
          response: { 200: DataEnvelope(AccessList) },
        },
      },
      async (request, reply) => ok(reply, await service.unshare(request.principal, request.params.artifact_id, request.body)),
    );

    app.get(
      '/artifacts/:artifact_id/access',
      {
        config: { permission: 'artifacts:read' },
        schema: {
          tags,
          summary: 'Who may read the artifact: owner, agents, groups',
          params: ArtifactParams,
          response: { 200: DataEnvelope(AccessList) },
        },
      },
      async (request, reply) => ok(reply, await service.access(request.principal, request.params.artifact_id)),
    );

    app.delete(
      '/artifacts/:artifact_id',
      {
        config: { permission: 'artifacts:write' },
        schema: {
          tags,
          summary: 'Delete the artifact, all versions and unreferenced blobs',
          params: ArtifactParams,
          response: { 200: Deleted },
        },
      },
      async (request, reply) => {
        await service.delete(request.principal, request.params.artifact_id);
        return deleted(reply, request.params.artifact_id);
      },
    );
  };
}
